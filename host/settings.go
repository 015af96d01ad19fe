package host

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Setting documents one key of `ferry config` and checks values before they are
// stored, so a typo is refused with the reason instead of silently ignored.
type Setting struct {
	Key         string
	Description string
	Default     string
	Validate    func(string) error
}

// Settings lists every documented key. Later features add theirs here.
var Settings = []Setting{
	{
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
	},
	{
		Key:         "log.level",
		Description: "the least severe log level written: debug, info, warn or error",
		Default:     "info",
		Validate:    oneOf("debug", "info", "warn", "error"),
	},
}

// LookupSetting finds a documented key.
func LookupSetting(key string) (Setting, error) {
	for _, s := range Settings {
		if s.Key == key {
			return s, nil
		}
	}
	keys := make([]string, len(Settings))
	for i, s := range Settings {
		keys[i] = s.Key
	}
	sort.Strings(keys)
	return Setting{}, fmt.Errorf("unknown setting %q; known settings: %v (see `ferry config list`)", key, keys)
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		for _, ok := range values {
			if v == ok {
				return nil
			}
		}
		return fmt.Errorf("must be one of %v", values)
	}
}
