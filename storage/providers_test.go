package storage

import (
	"context"
	"errors"
	"testing"
)

func TestProviders(t *testing.T) {
	db, dir := openTemp(t)
	ctx := context.Background()
	if _, err := db.DefaultProvider(ctx); !errors.Is(err, ErrProviderNotFound) {
		t.Fatalf("empty: %v", err)
	}
	// The first provider becomes the default even when not asked.
	p, existed, err := db.SaveProvider(ctx, ProviderConfig{ID: "a", Kind: "openai", BaseURL: "http://x/v1", Model: "m"})
	if err != nil || existed || !p.Default || p.CreatedAt.IsZero() {
		t.Fatalf("save a: %+v %v %v", p, existed, err)
	}
	p, _, err = db.SaveProvider(ctx, ProviderConfig{ID: "b", Kind: "anthropic", BaseURL: "http://y", Model: "c", MaxTokens: 100, APIKeyEnv: "K"})
	if err != nil || p.Default {
		t.Fatalf("save b: %+v %v", p, err)
	}
	if err := db.SetSecret(ctx, ProviderSecretKey("b"), []byte("sk")); err != nil {
		t.Fatal(err)
	}
	// Updating the default without --default keeps it the default.
	p, existed, err = db.SaveProvider(ctx, ProviderConfig{ID: "a", Kind: "openai", BaseURL: "http://x/v2", Model: "m2"})
	if err != nil || !existed || !p.Default || p.BaseURL != "http://x/v2" {
		t.Fatalf("update a: %+v %v %v", p, existed, err)
	}
	if _, _, err = db.SaveProvider(ctx, ProviderConfig{ID: "c", Kind: "openai", BaseURL: "http://z", Model: "m", Default: true}); err != nil {
		t.Fatal(err)
	}
	d, err := db.DefaultProvider(ctx)
	if err != nil || d.ID != "c" {
		t.Fatalf("default: %+v %v", d, err)
	}
	if err := db.SetDefaultProvider(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := db.SetDefaultProvider(ctx, "nope"); !errors.Is(err, ErrProviderNotFound) {
		t.Fatalf("set default of unknown: %v", err)
	}
	all, err := db.Providers(ctx)
	if err != nil || len(all) != 3 || all[0].ID != "b" || !all[0].Default || all[1].Default || all[2].Default {
		t.Fatalf("list: %+v %v", all, err)
	}
	if all[0].MaxTokens != 100 || all[0].APIKeyEnv != "K" {
		t.Fatalf("fields lost: %+v", all[0])
	}
	// Removing the default promotes the oldest remaining one, and takes the key along.
	nd, err := db.DeleteProvider(ctx, "b")
	if err != nil || nd != "a" {
		t.Fatalf("delete b: %q %v", nd, err)
	}
	if _, ok, _ := db.Secret(ctx, ProviderSecretKey("b")); ok {
		t.Fatal("the key of a removed provider is still stored")
	}
	if _, err := db.Provider(ctx, "b"); !errors.Is(err, ErrProviderNotFound) {
		t.Fatalf("get removed: %v", err)
	}
	if _, err := db.DeleteProvider(ctx, "b"); !errors.Is(err, ErrProviderNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	if nd, err := db.DeleteProvider(ctx, "c"); err != nil || nd != "" {
		t.Fatalf("delete c: %q %v", nd, err)
	}
	db.Close()
	// Survives reopening.
	db2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	d, err = db2.DefaultProvider(ctx)
	if err != nil || d.ID != "a" || d.Model != "m2" {
		t.Fatalf("after reopen: %+v %v", d, err)
	}
}
