package config

import (
	"context"
	"strings"

	"github.com/ferryhq/ferry/protocol"
)

// The options page reads and changes settings through these methods, with the same
// table and the same checks as `ferry config`. Secrets are write-only: no method
// returns a secret's value, only whether it is set.

// Store is where settings and secrets are kept; *storage.DB satisfies it.
type Store interface {
	ListSettings(ctx context.Context) (map[string]string, error)
	SetSetting(ctx context.Context, key, value string) error
	DeleteSetting(ctx context.Context, key string) error
	SecretKeys(ctx context.Context) ([]string, error)
	SetSecret(ctx context.Context, key string, value []byte) error
	DeleteSecret(ctx context.Context, key string) error
}

// RegisterMethods adds settings.list, settings.set and secrets.set over store.
// changed runs after every settings.set (nil: nothing to tell).
func RegisterMethods(mux *protocol.Mux, store Store, changed func()) {
	m := methods{store, changed}
	protocol.Handle(mux, "settings.list", m.settingsList, protocol.Outside)
	protocol.Handle(mux, "settings.set", m.settingsSet)
	protocol.Handle(mux, "secrets.set", m.secretsSet)
}

type methods struct {
	db      Store
	changed func()
}

type settingView struct {
	Key         string `json:"key"`
	Value       string `json:"value"`
	Default     string `json:"default"`
	Description string `json:"description"`
	Set         bool   `json:"set"` // false: the value is the default
}

func (h methods) settingsList(ctx context.Context, _ struct{}) (any, error) {
	stored, err := h.db.ListSettings(ctx)
	if err != nil {
		return nil, err
	}
	out := []settingView{}
	for _, s := range All() {
		v, set := stored[s.Key]
		if !set {
			v = s.Default
		}
		out = append(out, settingView{Key: s.Key, Value: v, Default: s.Default, Description: s.Description, Set: set})
	}
	secrets, err := h.db.SecretKeys(ctx)
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

func (h methods) settingsSet(ctx context.Context, p settingsSetParams) (any, error) {
	// The tool pipeline caches its policy for a second: a change applies to the next call.
	if h.changed != nil {
		defer h.changed()
	}
	s, err := Lookup(p.Key)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %v", err)
	}
	if p.Value == nil {
		return map[string]any{"key": s.Key, "value": s.Default, "set": false}, h.db.DeleteSetting(ctx, s.Key)
	}
	if err := s.Check(*p.Value); err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %s: %v", s.Key, err)
	}
	if err := h.db.SetSetting(ctx, s.Key, *p.Value); err != nil {
		return nil, err
	}
	return map[string]any{"key": s.Key, "value": *p.Value, "set": true}, nil
}

type secretsSetParams struct {
	Key   string  `json:"key"`
	Value *string `json:"value"` // null or absent: delete the secret
}

func (h methods) secretsSet(ctx context.Context, p secretsSetParams) (any, error) {
	if strings.TrimSpace(p.Key) == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: secrets.set needs the secret's key")
	}
	if p.Value == nil || *p.Value == "" {
		return map[string]any{"key": p.Key, "set": false}, h.db.DeleteSecret(ctx, p.Key)
	}
	if err := h.db.SetSecret(ctx, p.Key, []byte(*p.Value)); err != nil {
		return nil, err
	}
	// The value is never echoed back.
	return map[string]any{"key": p.Key, "set": true}, nil
}
