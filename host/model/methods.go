package model

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/ferryhq/ferry/protocol"
	"github.com/ferryhq/ferry/storage"
)

// MethodFunc answers one protocol method (the host's own MethodFunc has this shape).
type MethodFunc = func(ctx context.Context, params json.RawMessage) (any, error)

// RegisterMethods adds the providers.* protocol methods for the options page. No
// method returns a key: providers.save takes one write-only, and listings say only
// key_set and key_source.
func RegisterMethods(register func(name string, fn func(context.Context, json.RawMessage) (any, error)) error, db *storage.DB) error {
	for _, m := range []struct {
		name string
		fn   MethodFunc
	}{
		{"providers.list", func(ctx context.Context, _ json.RawMessage) (any, error) {
			ps, err := List(ctx, db)
			if err != nil {
				return nil, err
			}
			return map[string]any{"providers": ps}, nil
		}},
		{"providers.save", func(ctx context.Context, raw json.RawMessage) (any, error) {
			var p SaveParams
			if err := protocol.DecodeParams(raw, &p); err != nil {
				return nil, err
			}
			v, existed, err := Save(ctx, db, p)
			if err != nil {
				return nil, invalid(err)
			}
			return map[string]any{"provider": v, "replaced": existed}, nil
		}},
		{"providers.remove", func(ctx context.Context, raw json.RawMessage) (any, error) {
			var p struct {
				ID string `json:"id"`
			}
			if err := protocol.DecodeParams(raw, &p); err != nil {
				return nil, err
			}
			nd, err := db.DeleteProvider(ctx, p.ID)
			if err != nil {
				return nil, invalid(err)
			}
			return map[string]any{"removed": p.ID, "default": nd}, nil
		}},
		{"providers.set_default", func(ctx context.Context, raw json.RawMessage) (any, error) {
			var p struct {
				ID string `json:"id"`
			}
			if err := protocol.DecodeParams(raw, &p); err != nil {
				return nil, err
			}
			if err := db.SetDefaultProvider(ctx, p.ID); err != nil {
				return nil, invalid(err)
			}
			return map[string]any{"default": p.ID}, nil
		}},
		{"providers.test", func(ctx context.Context, raw json.RawMessage) (any, error) {
			var p struct {
				ID string `json:"id"`
			}
			if err := protocol.DecodeParams(raw, &p); err != nil {
				return nil, err
			}
			return Test(ctx, db, p.ID), nil
		}},
	} {
		if err := register(m.name, m.fn); err != nil {
			return err
		}
	}
	return nil
}

// invalid turns a refusal of the caller's input (a bad field, an unknown id) into
// invalid params, leaving storage failures as they are.
func invalid(err error) error {
	var ve *validationError
	if errors.As(err, &ve) || errors.Is(err, storage.ErrProviderNotFound) {
		return protocol.Errorf(protocol.CodeInvalidParams, "%s", err.Error())
	}
	return err
}
