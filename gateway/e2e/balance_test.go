package e2e

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ferryhq/ferry/host/model/modeltest"
)

// TestBalanceAndCooldown: a route's weights spread its requests over its
// upstreams; an upstream that answers 429 goes after the others for its
// Retry-After, instead of being tried first by every request.
func TestBalanceAndCooldown(t *testing.T) {
	e := newEnv(t, "sqlite")
	fakes := map[string]*modeltest.Server{}
	var calls = map[string]*atomic.Int64{}
	for _, n := range []string{"u1", "u2", "c1", "c2"} {
		f := modeltest.NewOpenAI(t)
		var k atomic.Int64
		calls[n] = &k
		name := n
		f.SetResponder(func(modeltest.Request) modeltest.Turn {
			if k.Add(1) == 1 && name == "c1" {
				return modeltest.Turn{Status: 429, RetryAfter: "30"}
			}
			return modeltest.Turn{Text: "from " + name}
		})
		fakes[n] = f
		e.must("k\n", "upstream", "add", n, "--kind", "openai", "--base-url", f.URL, "--api-key-stdin")
	}
	e.must("", "route", "add", "lb", "--upstream", "u1", "--fallback", "u2", "--weights", "1,1")
	e.must("", "route", "add", "cd", "--upstream", "c1", "--fallback", "c2")
	if _, errs, code := e.ferry("", "route", "add", "bad", "--upstream", "u1", "--weights", "1,2"); code == 0 || !strings.Contains(errs, "one weight") {
		t.Fatalf("weights that do not match: %d %s", code, errs)
	}
	tok := e.addUser("bal")
	g := e.serve()
	for i := 0; i < 60; i++ {
		resp := post(t, g.URL+endpoint("openai"), tok, "openai", chatBody("openai", "lb", "hi", false, nil))
		if body := readAll(t, resp); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	if a, b := calls["u1"].Load(), calls["u2"].Load(); a < 15 || b < 15 || a+b != 60 {
		t.Fatalf("weights 1,1 spread 60 requests as %d and %d", a, b)
	}
	for i := 0; i < 5; i++ {
		resp := post(t, g.URL+endpoint("openai"), tok, "openai", chatBody("openai", "cd", "hi", false, nil))
		if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(body, "from c2") {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
	if n := calls["c1"].Load(); n != 1 {
		t.Fatalf("the upstream that said 429, Retry-After 30 was tried %d times in 5 requests", n)
	}
}
