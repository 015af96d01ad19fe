package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
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

type refusal struct{ msg, reason string }

func (r refusal) Error() string  { return r.msg }
func (r refusal) Reason() string { return r.reason }

// A refusal a method returns, wrapped or not, reaches the peer as invalid params
// naming its kind; the method's own *Error and other errors pass as they are.
func TestMuxAnswersRefusalsOnce(t *testing.T) {
	mux := NewMux()
	errs := map[string]error{
		"refused": fmt.Errorf("conversation %q: %w", "c1", refusal{"no such conversation", "not_found"}),
		"coded":   Errorf(CodeAskRefused, "not now"),
		"broken":  errors.New("disk I/O error"),
	}
	for name, err := range errs {
		Handle(mux, name, func(context.Context, struct{}) (any, error) { return nil, err })
	}
	_, err := mux.Dispatch(context.Background(), "refused", nil)
	var pe *Error
	if !errors.As(err, &pe) || pe.Code != CodeInvalidParams || pe.Message != `conversation "c1": no such conversation` ||
		pe.Data.(map[string]string)["reason"] != "not_found" {
		t.Fatalf("refusal: %#v", err)
	}
	if _, err := mux.Dispatch(context.Background(), "coded", nil); !errors.As(err, &pe) || pe.Code != CodeAskRefused {
		t.Fatalf("coded: %v", err)
	}
	if _, err := mux.Dispatch(context.Background(), "broken", nil); errors.As(err, &pe) || err.Error() != "disk I/O error" {
		t.Fatalf("broken: %v", err)
	}
}

// PROTOCOL.md's table of error codes is errors.go's: the same codes, no more.
func TestProtocolMDCodeTable(t *testing.T) {
	doc, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`(?m)^\| (-32\d{3}) \| `).FindAllStringSubmatch(string(doc), -1)
	documented := map[int]bool{}
	for _, r := range rows {
		n, _ := strconv.Atoi(r[1])
		documented[n] = true
	}
	for _, c := range Codes {
		if !documented[c] {
			t.Errorf("code %d is in errors.go but not in PROTOCOL.md's table", c)
		}
		delete(documented, c)
	}
	for c := range documented {
		t.Errorf("PROTOCOL.md documents code %d, which errors.go does not have", c)
	}
}
