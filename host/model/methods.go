package model

import (
	"context"

	"github.com/ferryhq/ferry/protocol"
	"github.com/ferryhq/ferry/storage"
)

type idParams struct {
	ID string `json:"id"`
}

// RegisterMethods adds the providers.* protocol methods for the options page. No
// method returns a key: providers.save takes one write-only, and listings say only
// key_set and key_source.
func RegisterMethods(mux *protocol.Mux, db *storage.DB) {
	protocol.Handle(mux, "providers.list", func(ctx context.Context, _ struct{}) (any, error) {
		ps, err := List(ctx, db)
		if err != nil {
			return nil, err
		}
		return map[string]any{"providers": ps}, nil
	})
	protocol.Handle(mux, "providers.save", func(ctx context.Context, p SaveParams) (any, error) {
		v, existed, err := Save(ctx, db, p)
		if err != nil {
			return nil, err
		}
		return map[string]any{"provider": v, "replaced": existed}, nil
	})
	protocol.Handle(mux, "providers.remove", func(ctx context.Context, p idParams) (any, error) {
		nd, err := db.DeleteProvider(ctx, p.ID)
		if err != nil {
			return nil, err
		}
		return map[string]any{"removed": p.ID, "default": nd}, nil
	})
	protocol.Handle(mux, "providers.set_default", func(ctx context.Context, p idParams) (any, error) {
		if err := db.SetDefaultProvider(ctx, p.ID); err != nil {
			return nil, err
		}
		return map[string]any{"default": p.ID}, nil
	})
	protocol.Handle(mux, "providers.test", func(ctx context.Context, p idParams) (any, error) {
		return Test(ctx, db, p.ID), nil
	})
}

// Reason makes a refusal of a provider's configuration a protocol.Refusal: the
// method table answers it as invalid params, as it answers storage's.
func (e *validationError) Reason() string { return "invalid" }
