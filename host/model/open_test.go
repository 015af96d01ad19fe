package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/model/modeltest"
	"github.com/ferryhq/ferry/protocol"
	"github.com/ferryhq/ferry/storage"
)

func openDB(t *testing.T) *storage.DB {
	t.Helper()
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpen(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	_, err := model.Open(ctx, db, "")
	if !errors.Is(err, model.ErrNoProvider) || !strings.Contains(err.Error(), "ferry provider add") {
		t.Fatalf("%v", err)
	}
	srv := modeltest.NewAnthropic(t, modeltest.Text("hello"))
	srv.SetKey("k-123")
	key := "k-123"
	if _, _, err := model.Save(ctx, db, model.SaveParams{ID: "claude", Kind: "anthropic", BaseURL: srv.URL + "/", Model: "c", Key: &key, MaxTokens: 1000}); err != nil {
		t.Fatal(err)
	}
	p, err := model.Open(ctx, db, "")
	if err != nil {
		t.Fatal(err)
	}
	if info := p.Info(); info.ID != "claude" || info.ContextWindow != 200000 || info.BaseURL != srv.URL {
		t.Fatalf("%+v", info)
	}
	resp, err := p.Stream(ctx, model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, nil)
	if err != nil || resp.Text != "hello" || srv.Last().MaxTokens != 1000 {
		t.Fatalf("%v %+v", err, resp)
	}
	if _, err := model.Open(ctx, db, "nope"); !errors.Is(err, model.ErrNoProvider) {
		t.Fatalf("%v", err)
	}
	// The retry setting reaches the provider.
	if err := db.SetSetting(ctx, model.SettingMaxRetries, "1"); err != nil {
		t.Fatal(err)
	}
	srv.Add(modeltest.Fail(529, "0"), modeltest.Fail(529, "0"), modeltest.Text("never"))
	p, _ = model.Open(ctx, db, "claude")
	n := 0
	_, err = p.Stream(ctx, model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil, func(a model.Attempt) { n++ })
	if err == nil || n != 2 || !strings.Contains(err.Error(), "529") {
		t.Fatalf("%v after %d tries", err, n)
	}
	// An Anthropic provider without a key cannot be opened.
	if _, _, err := model.Save(ctx, db, model.SaveParams{ID: "nokey", Kind: "anthropic", BaseURL: srv.URL, Model: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := model.Open(ctx, db, "nokey"); err == nil || !strings.Contains(err.Error(), "has no API key") {
		t.Fatalf("%v", err)
	}
}

func TestEnvKey(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	srv := modeltest.NewOpenAI(t, modeltest.Text("ok"))
	srv.SetKey("from-env")
	t.Setenv("FERRY_TEST_KEY", "from-env")
	if _, _, err := model.Save(ctx, db, model.SaveParams{ID: "o", Kind: "openai", BaseURL: srv.URL, Model: "m", APIKeyEnv: "FERRY_TEST_KEY"}); err != nil {
		t.Fatal(err)
	}
	res := model.Test(ctx, db, "o")
	if !res.OK || res.Reply != "ok" || res.Attempts != 1 {
		t.Fatalf("%+v", res)
	}
	vs, _ := model.List(ctx, db)
	if len(vs) != 1 || vs[0].KeySource != "env" || !vs[0].KeySet {
		t.Fatalf("%+v", vs)
	}
	t.Setenv("FERRY_TEST_KEY", "")
	if _, err := model.Open(ctx, db, "o"); err == nil || !strings.Contains(err.Error(), "$FERRY_TEST_KEY") {
		t.Fatalf("%v", err)
	}
}

func TestMethods(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	mux := protocol.NewMux()
	model.RegisterMethods(mux, db)
	call := func(name, params string) (string, error) {
		res, err := mux.Dispatch(ctx, name, json.RawMessage(params))
		b, _ := json.Marshal(res)
		return string(b), err
	}
	srv := modeltest.NewOpenAI(t, modeltest.Text("ok"))
	srv.SetKey("sk-write-only")
	out, err := call("providers.save", `{"id":"o","kind":"openai","base_url":"`+srv.URL+`","model":"m","key":"sk-write-only"}`)
	if err != nil || strings.Contains(out, "sk-write-only") || !strings.Contains(out, `"key_set":true`) {
		t.Fatalf("%s %v", out, err)
	}
	out, err = call("providers.list", ``)
	if err != nil || strings.Contains(out, "sk-write-only") || !strings.Contains(out, `"key_source":"secret"`) || !strings.Contains(out, `"default":true`) {
		t.Fatalf("%s %v", out, err)
	}
	out, err = call("providers.test", `{"id":"o"}`)
	if err != nil || !strings.Contains(out, `"ok":true`) {
		t.Fatalf("%s %v", out, err)
	}
	// Input errors are invalid params, with the reason.
	var pe *protocol.Error
	if _, err := call("providers.save", `{"id":"o","kind":"openai","base_url":"`+srv.URL+`","model":"m","api_key":"x"}`); !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidParams || !strings.Contains(err.Error(), "api_key") {
		t.Fatalf("unknown field: %v", err)
	}
	if _, err := call("providers.save", `{"id":"o","kind":"gemini","base_url":"`+srv.URL+`","model":"m"}`); !errors.As(err, &pe) || !strings.Contains(err.Error(), "unknown provider kind") {
		t.Fatalf("bad kind: %v", err)
	}
	if _, err := call("providers.set_default", `{"id":"zz"}`); !errors.As(err, &pe) {
		t.Fatalf("set_default zz: %v", err)
	}
	// Saving without a key keeps the stored one; clear_key removes it.
	if out, err := call("providers.save", `{"id":"o","kind":"openai","base_url":"`+srv.URL+`","model":"m2"}`); err != nil || !strings.Contains(out, `"key_set":true`) || !strings.Contains(out, `"replaced":true`) {
		t.Fatalf("%s %v", out, err)
	}
	if out, err := call("providers.save", `{"id":"o","kind":"openai","base_url":"`+srv.URL+`","model":"m2","clear_key":true}`); err != nil || !strings.Contains(out, `"key_set":false`) {
		t.Fatalf("%s %v", out, err)
	}
	if out, err := call("providers.remove", `{"id":"o"}`); err != nil || !strings.Contains(out, `"removed":"o"`) {
		t.Fatalf("%s %v", out, err)
	}
	if out, err := call("providers.list", `{}`); err != nil || out != `{"providers":[]}` {
		t.Fatalf("%s %v", out, err)
	}
}
