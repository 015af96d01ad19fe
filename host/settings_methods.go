package host

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/protocol"
)

// The options page reads and changes settings through these methods, with the same
// table and the same checks as `ferry config`. Secrets are write-only: no method
// returns a secret's value, only whether it is set.

type settingView struct {
	Key         string `json:"key"`
	Value       string `json:"value"`
	Default     string `json:"default"`
	Description string `json:"description"`
	Set         bool   `json:"set"` // false: the value is the default
}

func (h *Host) settingsList(ctx context.Context, raw json.RawMessage) (any, error) {
	if err := protocol.DecodeParams(raw, &struct{}{}); err != nil {
		return nil, err
	}
	stored, err := h.DB.ListSettings(ctx)
	if err != nil {
		return nil, err
	}
	out := []settingView{}
	for _, s := range config.All() {
		v, set := stored[s.Key]
		if !set {
			v = s.Default
		}
		out = append(out, settingView{Key: s.Key, Value: v, Default: s.Default, Description: s.Description, Set: set})
	}
	secrets, err := h.DB.SecretKeys(ctx)
	if err != nil {
		return nil, err
	}
	if secrets == nil {
		secrets = []string{}
	}
	return map[string]any{"settings": out, "secrets_set": secrets}, nil
}

type settingsSetParams struct {
	Key   string  `json:"key"`
	Value *string `json:"value"` // null or absent: back to the default
}

func (h *Host) settingsSet(ctx context.Context, raw json.RawMessage) (any, error) {
	var p settingsSetParams
	if err := protocol.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	// The tool pipeline caches its policy for a second: a change applies to the next call.
	if h.Tools != nil && h.Tools.Registry != nil {
		defer h.Tools.Registry.RefreshSettings()
	}
	s, err := config.Lookup(p.Key)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %v", err)
	}
	if p.Value == nil {
		return map[string]any{"key": s.Key, "value": s.Default, "set": false}, h.DB.DeleteSetting(ctx, s.Key)
	}
	if err := s.Check(*p.Value); err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %s: %v", s.Key, err)
	}
	if err := h.DB.SetSetting(ctx, s.Key, *p.Value); err != nil {
		return nil, err
	}
	return map[string]any{"key": s.Key, "value": *p.Value, "set": true}, nil
}

type secretsSetParams struct {
	Key   string  `json:"key"`
	Value *string `json:"value"` // null or absent: delete the secret
}

func (h *Host) secretsSet(ctx context.Context, raw json.RawMessage) (any, error) {
	var p secretsSetParams
	if err := protocol.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.Key) == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: secrets.set needs the secret's key")
	}
	if p.Value == nil || *p.Value == "" {
		return map[string]any{"key": p.Key, "set": false}, h.DB.DeleteSecret(ctx, p.Key)
	}
	if err := h.DB.SetSecret(ctx, p.Key, []byte(*p.Value)); err != nil {
		return nil, err
	}
	// The value is never echoed back.
	return map[string]any{"key": p.Key, "set": true}, nil
}
