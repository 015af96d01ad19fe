package protocol

import (
	"encoding/json"
	"testing"
)

func TestDecodeMessage(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantCode int // 0: valid
		kind     string
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"host.ping","params":{}}`, 0, "request"},
		{"string id", `{"jsonrpc":"2.0","id":"a","method":"m"}`, 0, "request"},
		{"null id is still a request", `{"jsonrpc":"2.0","id":null,"method":"m"}`, 0, "request"},
		{"notification", `{"jsonrpc":"2.0","method":"m","params":[1]}`, 0, "notification"},
		{"response", `{"jsonrpc":"2.0","id":3,"result":{"ok":true}}`, 0, "response"},
		{"null result is a result", `{"jsonrpc":"2.0","id":3,"result":null}`, 0, "response"},
		{"error response", `{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"x"}}`, 0, "response"},
		{"not JSON", `{"jsonrpc":`, CodeParseError, ""},
		{"not JSON at all", `hello`, CodeParseError, ""},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"m"}]`, CodeInvalidRequest, ""},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"m"}`, CodeInvalidRequest, ""},
		{"missing version", `{"id":1,"method":"m"}`, CodeInvalidRequest, ""},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"m"}`, CodeInvalidRequest, ""},
		{"numeric method", `{"jsonrpc":"2.0","id":1,"method":5}`, CodeInvalidRequest, ""},
		{"scalar params", `{"jsonrpc":"2.0","id":1,"method":"m","params":5}`, CodeInvalidRequest, ""},
		{"nothing", `{"jsonrpc":"2.0"}`, CodeInvalidRequest, ""},
		{"result and error", `{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}`, CodeInvalidRequest, ""},
		{"request with result", `{"jsonrpc":"2.0","id":1,"method":"m","result":1}`, CodeInvalidRequest, ""},
		{"a string", `"hi"`, CodeInvalidRequest, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodeMessage([]byte(tt.in))
			if tt.wantCode == 0 {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				kind := map[bool]string{true: "request"}[m.IsRequest()] + map[bool]string{true: "notification"}[m.IsNotification()] + map[bool]string{true: "response"}[m.IsResponse()]
				if kind != tt.kind {
					t.Fatalf("kind = %q, want %q", kind, tt.kind)
				}
				return
			}
			if err == nil || err.Code != tt.wantCode {
				t.Fatalf("error = %v, want code %d", err, tt.wantCode)
			}
			if err.Message == "" {
				t.Fatal("error has no message")
			}
		})
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"host.ping","params":{"payload":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"result":null}`,
		`[1,2]`, `{"id":{}}`, `{"jsonrpc":"2.0","method":"$/chunk","params":{"id":"c1","index":0,"count":2,"data":"{"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeMessage(data)
		if err != nil {
			if err.Code != CodeParseError && err.Code != CodeInvalidRequest {
				t.Fatalf("unexpected code %d", err.Code)
			}
			return
		}
		n := 0
		for _, k := range []bool{m.IsRequest(), m.IsNotification(), m.IsResponse()} {
			if k {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("valid message %s has %d kinds", data, n)
		}
		// A valid message must survive re-encoding and decoding unchanged in kind.
		out, merr := json.Marshal(m)
		if merr != nil {
			t.Fatalf("re-encoding %s: %v", data, merr)
		}
		if _, err := DecodeMessage(out); err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", out, err)
		}
	})
}
