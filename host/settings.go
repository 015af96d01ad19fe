package host

import (
	"encoding/json"
	"fmt"

	"github.com/ferryhq/ferry/host/config"
)

func init() {
	config.Register(config.Setting{
		Key:         SettingAllowedExtensions,
		Description: "extension IDs, beyond the pinned one, that may start the host (JSON array; `ferry install --extension-id` maintains it)",
		Default:     "[]",
		Validate: func(v string) error {
			var ids []string
			if err := json.Unmarshal([]byte(v), &ids); err != nil {
				return fmt.Errorf(`must be a JSON array of extension IDs, like ["abcdefghijklmnopabcdefghijklmnop"]`)
			}
			for _, id := range ids {
				if !ValidExtensionID(id) {
					return fmt.Errorf("%q is not an extension ID (32 letters a-p)", id)
				}
			}
			return nil
		},
	})
	config.Register(config.Setting{
		Key:         "log.level",
		Description: "the least severe log level written: debug, info, warn or error",
		Default:     "info",
		Validate:    config.OneOf("debug", "info", "warn", "error"),
	})
}
