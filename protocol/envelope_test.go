package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A large answer's result is delimited, not checked, in any member order; everything
// else DecodeMessage reads is checked.
func TestLargeResponseResultIsDelimited(t *testing.T) {
	big := strings.Repeat(`<p class='x'>a \"quoted\" word\\</p>`, 4000)
	result := `{"html":"` + big + `","n":[1,{"a":"}"}],"t":true}`
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":7,"result":` + result + `}`,
		` { "result" : ` + result + ` , "id" : 7 , "jsonrpc" : "2.0" } `,
	} {
		m, err := DecodeMessage([]byte(frame))
		if err != nil || !m.IsResponse() {
			t.Fatalf("%.60s…: %v", frame, err)
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
	// A malformed result reaches the caller waiting for it, whose decode then fails
	// at once instead of the call waiting for an answer that was dropped.
	bad := `{"jsonrpc":"2.0","id":7,"result":{"a":"` + big + `",}}`
	m, err := DecodeMessage([]byte(bad))
	if err != nil || json.Valid(m.Result) {
		t.Fatalf("large malformed result: %v, valid %v", err, json.Valid(m.Result))
	}
	// Below the threshold, and in requests, a malformed value is a parse error.
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"a":1,}}`,
		`{"jsonrpc":"2.0","id":7,"method":"m","params":{"a":"` + big + `",}}`,
		`{"jsonrpc":"2.0","id":7,"method":"m","result":{"a":"` + big + `",}}`,
	} {
		if _, err := DecodeMessage([]byte(frame)); err == nil || err.Code != CodeParseError {
			t.Errorf("%.60s…: %v, want a parse error", frame, err)
		}
	}
}

// The members' values are slices of the frame: a large request's params are not
// copied before the method decodes them.
func TestEnvelopeSharesTheFrame(t *testing.T) {
	frame := []byte(`{"jsonrpc":"2.0","id":1,"method":"host.ping","params":{"payload":"` + strings.Repeat("x", 1000) + `"}}`)
	m, err := DecodeMessage(frame)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(frame, []byte(`{"payload"`))
	if &m.Params[0] != &frame[i] || len(m.Params) != len(frame)-i-1 {
		t.Fatal("params were copied")
	}
}

func TestValidValueAtTheDepthLimit(t *testing.T) {
	for _, depth := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		v := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		got := validValue([]byte(v), 0, 1) == len(v)
		if got != json.Valid([]byte(v)) {
			t.Errorf("depth %d: validValue %v, json.Valid %v", depth, got, !got)
		}
		frame := `{"jsonrpc":"2.0","id":1,"method":"m","params":` + v + `}`
		m, ok := scanEnvelope([]byte(frame))
		var slow Message
		perr := unmarshalMessage([]byte(frame), &slow)
		if ok && (perr != nil || string(m.Params) != string(slow.Params)) {
			t.Errorf("depth %d in params: the envelope accepted what Unmarshal refuses (%v)", depth, perr)
		}
	}
}

func TestValidValue(t *testing.T) {
	for _, s := range []string{
		`0`, `-0`, `1.5e+10`, `-12.25E-3`, `true`, `false`, `null`, `""`, `"\u00e9\n\"\\\/"`,
		`{}`, `[]`, ` [ 1 , { "a" : [ ] } ] `, "\"\xff\xfe\"", `"✓"`, `{"a":{"b":[null,"x"]}}`,
		`01`, `-`, `1.`, `.5`, `1e`, `+1`, `tru`, `nul`, `"\x"`, `"\u12"`, "\"\x1f\"", `"abc`,
		`{"a"}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{1:2}`, `{"a":1`, `]`, ``, ` `, `"a" "b"`, `{"a":1}}`,
	} {
		b := []byte(s)
		end := validValue(b, skipWS(b, 0), 1)
		got := end >= 0 && skipWS(b, end) == len(b)
		if got != json.Valid(b) {
			t.Errorf("%q: validValue says %v, json.Valid %v", s, got, !got)
		}
	}
}

// FuzzValidValue holds the checker to encoding/json's: the same verdict on any input.
func FuzzValidValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e3,true,null,"x\u0041\n"]}`, `"plain text long enough for a word"`, `[01]`, "\"tab\there\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		end := validValue(b, skipWS(b, 0), 1)
		got := end >= 0 && skipWS(b, end) == len(b)
		if got != json.Valid(b) {
			t.Fatalf("%q: validValue says %v, json.Valid %v", b, got, !got)
		}
	})
}

// FuzzScanEnvelope holds the fast reading of a frame to json.Unmarshal's: whatever
// the envelope reader accepts, Unmarshal reads as the same message; only the
// unchecked result of a large answer may be malformed, and then Unmarshal refuses it.
func FuzzScanEnvelope(f *testing.F) {
	pad := strings.Repeat("x", fastResponseMin)
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"host.ping","params":{"payload":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"result":null}`, `{}`, `{"id":1,"ID":2}`, `{"method":"a\u0041"}`,
		`{"jsonrpc":"2.0","method":"$/chunk","params":{"id":"c1","index":0,"count":2,"data":"{"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"a":"` + pad + `"}}`,
		`{"result":["\"` + pad + `\\"],"id":1,"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":1,"result":"` + pad + `\\\"","extra":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := scanEnvelope(data)
		if !ok {
			return
		}
		var slow Message
		if perr := unmarshalMessage(data, &slow); perr != nil {
			if len(data) >= fastResponseMin && fast.Result != nil && !json.Valid(fast.Result) {
				return
			}
			t.Fatalf("the envelope accepted what Unmarshal refuses (%v): %.200q", perr, data)
		}
		if !reflect.DeepEqual(norm(fast), norm(slow)) {
			t.Fatalf("envelope %+v, Unmarshal %+v: %.200q", fast, slow, data)
		}
	})
}

func norm(m Message) [5]string {
	return [5]string{m.JSONRPC, string(m.ID), m.Method, string(m.Params), string(m.Result)}
}
