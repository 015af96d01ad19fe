package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/gateway/store"
	"github.com/ferryhq/ferry/host/model/modeltest"
)

func sealKey() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// TestUpstreamKeysSealed: with an operator key, upstream keys are sealed in the
// database; a rotation (processes given the new key and the old, then reseal)
// keeps serving throughout, and a process without the key refuses to start
// rather than call upstreams without theirs.
func TestUpstreamKeysSealed(t *testing.T) {
	k1, k2 := sealKey(), sealKey()
	t.Setenv(store.SecretKeyEnv, k1)
	e := newEnv(t, "sqlite")
	oa := modeltest.NewOpenAI(t)
	oa.SetKey(oaKey)
	oa.SetResponder(func(modeltest.Request) modeltest.Turn { return modeltest.Turn{Text: "sealed ok"} })
	e.must(oaKey+"\n", "upstream", "add", "oa", "--kind", "openai", "--base-url", oa.URL, "--api-key-stdin")
	e.must("", "route", "add", "gpt", "--upstream", "oa")
	tok := e.addUser("sid")
	inFile := func(s string) bool {
		for _, f := range []string{e.dsn, e.dsn + "-wal"} {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), s) {
				return true
			}
		}
		return false
	}
	if inFile(oaKey) || !inFile("sealed:v1:") {
		t.Fatal("the upstream key is in the database as it was given")
	}
	ask := func(g *gateway) {
		t.Helper()
		resp := post(t, g.URL+endpoint("openai"), tok, "openai", chatBody("openai", "gpt", "hi", false, nil))
		if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(body, "sealed ok") {
			t.Fatalf("through %s: %d %s", g.URL, resp.StatusCode, body)
		}
	}
	g1 := e.serve()
	ask(g1)

	// The rotation: a process that knows both keys, then reseal.
	t.Setenv(store.SecretKeyEnv, k2)
	t.Setenv(store.OldSecretKeyEnv, k1)
	g2 := e.serve()
	gen := g2.generation(t)
	if out := e.must("", "upstream", "reseal"); !strings.Contains(out, "sealed 1") {
		t.Fatalf("reseal: %s", out)
	}
	g2.waitGeneration(t, gen+1)
	ask(g2)
	// g1 knows only the old key: it keeps its configuration, and serves on.
	ask(g1)

	t.Setenv(store.SecretKeyEnv, "")
	t.Setenv(store.OldSecretKeyEnv, "")
	out, errs, code := e.ferry("", "upstream", "list")
	if code != 0 || !strings.Contains(out, "oa") {
		t.Fatalf("listing upstreams needs no key: %d %s", code, errs)
	}
	cmd := []string{"serve", "--addr", "127.0.0.1:0", "--db", e.dsn}
	if _, errs, code := e.ferry("", cmd...); code == 0 || !strings.Contains(errs, store.SecretKeyEnv) {
		t.Fatalf("serve without the key: %d %s", code, errs)
	}
}
