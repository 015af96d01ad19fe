package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type echoParams struct {
	Name  string `json:"name"`
	Count int    `json:"count,omitempty"`
}

func TestMuxDecodesOnceStrictly(t *testing.T) {
	mux := NewMux()
	calls := 0
	Handle(mux, "echo", func(ctx context.Context, p echoParams) (any, error) {
		calls++
		return p, nil
	})
	ctx := context.Background()
	res, err := mux.Dispatch(ctx, "echo", json.RawMessage(`{"name":"a","count":2}`))
	if err != nil || res.(echoParams) != (echoParams{"a", 2}) {
		t.Fatalf("%+v %v", res, err)
	}
	// Absent and null params are the zero value.
	for _, raw := range []json.RawMessage{nil, json.RawMessage(`null`)} {
		if res, err := mux.Dispatch(ctx, "echo", raw); err != nil || res.(echoParams) != (echoParams{}) {
			t.Fatalf("params %s: %+v %v", raw, res, err)
		}
	}
	// A misspelt field and a wrong type are invalid params, and the method never runs.
	before := calls
	for _, raw := range []string{`{"nmae":"a"}`, `{"count":"two"}`, `[1]`} {
		_, err := mux.Dispatch(ctx, "echo", json.RawMessage(raw))
		var pe *Error
		if !errors.As(err, &pe) || pe.Code != CodeInvalidParams || !strings.HasPrefix(pe.Message, "invalid params: ") {
			t.Errorf("%s: %v; want invalid params", raw, err)
		}
	}
	if calls != before {
		t.Fatal("a method ran with params it could not decode")
	}
	_, err = mux.Dispatch(ctx, "nope", nil)
	var pe *Error
	if !errors.As(err, &pe) || pe.Code != CodeMethodNotFound || !strings.Contains(pe.Message, "nope") {
		t.Fatalf("unknown method: %v", err)
	}
	if got := mux.Names(); len(got) != 1 || got[0] != "echo" || !mux.Has("echo") || mux.Has("nope") {
		t.Fatalf("names %v", got)
	}
}

func TestMuxRefusesDuplicates(t *testing.T) {
	mux := NewMux()
	fn := func(context.Context, struct{}) (any, error) { return nil, nil }
	Handle(mux, "a.b", fn)
	for name, register := range map[string]func(){
		"a second a.b":  func() { Handle(mux, "a.b", fn) },
		"an empty name": func() { Handle(mux, "", fn) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s was accepted", name)
				}
			}()
			register()
		}()
	}
}
