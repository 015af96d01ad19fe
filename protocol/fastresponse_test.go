package protocol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// fastResponse reads the envelope of a large success response without decoding
// its result, in any member order, and leaves everything else to DecodeMessage.
func TestFastResponse(t *testing.T) {
	big := strings.Repeat(`<p class='x'>a \"quoted\" word\\</p>`, 4000)
	result := `{"html":"` + big + `","n":[1,{"a":"}"}],"t":true}`
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":7,"result":` + result + `}`,
		` { "result" : ` + result + ` , "id" : 7 , "jsonrpc" : "2.0" } `,
	} {
		m := fastResponse([]byte(frame))
		if m == nil {
			t.Fatalf("no fast path for %.60s…", frame)
		}
		if string(m.ID) != "7" || string(m.Result) != result {
			t.Fatalf("id %s, result %.60s…", m.ID, m.Result)
		}
		var v struct {
			HTML string `json:"html"`
		}
		if err := json.Unmarshal(m.Result, &v); err != nil || !strings.Contains(v.HTML, `"quoted"`) {
			t.Fatalf("result does not decode: %v", err)
		}
	}
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":7,"result":` + result,                          // truncated
		`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"` + big + `"}}`, // an error
		`{"jsonrpc":"2.0","id":"a","result":` + result + `}`,                  // a string id
		`{"jsonrpc":"2.0","method":"m","id":1,"params":` + result + `}`,       // a request
		`{"jsonrpc":"1.0","id":7,"result":` + result + `}`,
		`{"jsonrpc":"2.0","id":7,"result":` + result + `} x`,
		`{"jsonrpc":"2.0","id":7}`,
	} {
		if len(frame) >= fastResponseMin && fastResponse([]byte(frame)) != nil {
			t.Errorf("fast path taken for %.80s…", frame)
		}
	}
	if fastResponse([]byte(`{"jsonrpc":"2.0","id":7,"result":1}`)) != nil {
		t.Error("fast path for a small frame")
	}
}

// FuzzFastResponse holds the shortcut to the full decoder: whatever fastResponse
// accepts, DecodeMessage must accept as the same response, with the same id and a
// result that decodes to the same value (or the result itself is malformed).
func FuzzFastResponse(f *testing.F) {
	pad := strings.Repeat("x", fastResponseMin)
	f.Add(`{"jsonrpc":"2.0","id":7,"result":{"a":"` + pad + `"}}`)
	f.Add(`{"result":["\"` + pad + `\\"],"id":1,"jsonrpc":"2.0"}`)
	f.Add(`{"jsonrpc":"2.0","id":1,"result":"` + pad + `\\\"","extra":1}`)
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) < fastResponseMin {
			s += `                ` + strings.Repeat(" ", fastResponseMin)
		}
		fast := fastResponse([]byte(s))
		if fast == nil {
			return
		}
		slow, err := DecodeMessage([]byte(s))
		if err != nil {
			// Only a malformed result may get past the shortcut, and then the
			// caller's decode of it fails instead of the call hanging.
			if json.Valid(fast.Result) {
				t.Fatalf("fastResponse accepted what DecodeMessage refuses (%v): %.200q", err, s)
			}
			return
		}
		if !slow.IsResponse() || slow.Error != nil {
			t.Fatalf("fastResponse took a non-response for one: %.200q", s)
		}
		if string(fast.ID) != string(slow.ID) {
			t.Fatalf("id %s vs %s", fast.ID, slow.ID)
		}
		var a, b any
		if json.Unmarshal(fast.Result, &a) != nil || json.Unmarshal(slow.Result, &b) != nil {
			t.Fatalf("result does not decode: %.200q", s)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("results differ")
		}
	})
}
