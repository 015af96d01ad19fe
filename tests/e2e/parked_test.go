package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ferryhq/ferry/tests/browsertest"
)

// scToolResult is tools.call's result.
type scToolResult struct {
	Success bool            `json:"success"`
	Code    string          `json:"code"`
	Reason  string          `json:"reason"`
	Result  json.RawMessage `json:"result"`
}

// parked is a tools.call started in the worker without waiting for it: a call
// that waits for a person's answer in the panel.
type parked struct {
	s    *session
	name string // the worker global holding its outcome
}

var parkSeq int

// park starts tools.call of tool with args (the worker's ferryHost, caller
// "extension") and returns at once.
func (s *session) park(tool string, args map[string]any) parked {
	s.t.Helper()
	parkSeq++
	name := fmt.Sprintf("__parked%d", parkSeq)
	p, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
	expr := `(globalThis.` + name + ` = {done: false}, ` + settle(`ferryHost.request('tools.call', `+string(p)+`, 90000)`) +
		`.then(o => Object.assign(globalThis.` + name + `, o, {done: true})), true)`
	if _, err := browsertest.Eval[bool](s.sw, expr); err != nil {
		s.t.Fatal(err)
	}
	return parked{s, name}
}

// settled is the call's result once it is over.
func (p parked) settled() (scToolResult, bool) {
	t := p.s.t
	t.Helper()
	o, err := browsertest.Eval[struct {
		outcome
		Done bool `json:"done"`
	}](p.s.sw, `globalThis.`+p.name)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Done {
		return scToolResult{}, false
	}
	if !o.OK {
		t.Fatalf("tools.call rejected: %s: %s", o.Reason, o.Message)
	}
	var r scToolResult
	if err := json.Unmarshal(o.Result, &r); err != nil {
		t.Fatalf("tools.call result %s: %v", o.Result, err)
	}
	return r, true
}

// wait is the call's result, failing the test when it does not settle; check runs
// on every poll (nil: none) and may fail the test itself.
func (p parked) wait(check func()) scToolResult {
	p.s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if r, ok := p.settled(); ok {
			return r
		}
		if check != nil {
			check()
		}
		if time.Now().After(deadline) {
			p.s.t.Fatalf("%s never settled", p.name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitUpTo is waitIn bounded by d rather than by the test's deadline: for a
// condition a regression would keep false, so that the test fails early.
func (s *session) waitUpTo(tab context.Context, d time.Duration, what, cond string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, d)
	defer cancel()
	if err := browsertest.WaitFor(ctx, tab, cond); err != nil {
		dump, _ := browsertest.Eval[string](tab, `document.body.innerText`)
		s.t.Fatalf("%s: %v\npage text:\n%.2000s", what, err, dump)
	}
}
