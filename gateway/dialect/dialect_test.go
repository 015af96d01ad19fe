package dialect

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseAndBody(t *testing.T) {
	img := "data:image/png;base64," + strings.Repeat("A", 10000)
	body := `{"model":"gpt","stream":true,"max_completion_tokens":50,"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"` + img + `"}}]}],"x_custom":{"keep":1}}`
	r, err := Parse(OpenAI, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "gpt" || !r.Stream || r.MaxTokens != 50 || r.Images != 1 || !r.Tools || r.IncludeUsage {
		t.Fatalf("%+v", r)
	}
	// The bound counts the image once, not its bytes.
	want := int64(len(body)-len(img)) + ImageTokenBound + BaseOverhead + ToolsOverhead
	if r.InputBound != want {
		t.Fatalf("bound %d, want %d", r.InputBound, want)
	}
	var out map[string]any
	json.Unmarshal(r.Body(Options{Model: "gpt-4o-mini"}), &out)
	if out["model"] != "gpt-4o-mini" || out["stream_options"].(map[string]any)["include_usage"] != true || out["x_custom"] == nil {
		t.Fatalf("rewritten %v", out)
	}
	whole, _ := Parse(OpenAI, []byte(`{"model":"gpt","messages":[]}`))
	out = nil
	json.Unmarshal(whole.Body(Options{Model: "m", CapTokens: 99}), &out)
	if out["max_completion_tokens"] != 99.0 || out["stream_options"] != nil {
		t.Fatalf("capped %v", out)
	}
	for _, bad := range []string{`[]`, `{}`, `{"model":""}`, `{"model":"m","stream":"yes"}`, `{"model":"m","max_tokens":-1}`, `nope`} {
		if _, err := Parse(OpenAI, []byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	an, err := Parse(Anthropic, []byte(`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"QUJD"}}]}]}]}`))
	if err != nil || an.Images != 1 || an.MaxTokens != 10 {
		t.Fatalf("anthropic %+v %v", an, err)
	}
}

func TestMeter(t *testing.T) {
	m := &Meter{D: OpenAI, HideUsage: true}
	if !m.Event("", []byte(`{"choices":[{"delta":{"content":"héllo"}}],"usage":null}`)) {
		t.Fatal("a content chunk was hidden")
	}
	if m.Event("", []byte(`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}}`)) {
		t.Fatal("the usage chunk went to a client that did not ask")
	}
	m.Event("", []byte("[DONE]"))
	if u := m.Final(100); !m.Done || u != (Usage{Input: 9, Output: 2, Cached: 4, Final: true}) || m.OutBytes != 6 {
		t.Fatalf("openai %+v %+v", m, u)
	}
	a := &Meter{D: Anthropic}
	a.Event("message_start", []byte(`{"type":"message_start","message":{"usage":{"input_tokens":5,"cache_read_input_tokens":7,"cache_creation_input_tokens":1,"output_tokens":1}}}`))
	a.Event("content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}`))
	cut := a.Final(100)
	if cut.Final || cut.Input != 13 || cut.Output != 2 {
		t.Fatalf("a cut Anthropic stream: %+v", cut)
	}
	a.Event("message_delta", []byte(`{"type":"message_delta","usage":{"output_tokens":30}}`))
	a.Event("message_stop", []byte(`{"type":"message_stop"}`))
	if u := a.Final(100); u != (Usage{Input: 13, Output: 30, Cached: 7, Final: true}) {
		t.Fatalf("anthropic %+v", u)
	}
	e := &Meter{D: Anthropic}
	e.Event("error", []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	if e.Err == nil || e.Err.Type != "overloaded_error" {
		t.Fatalf("error event %+v", e.Err)
	}
}

func TestErrorShapes(t *testing.T) {
	var oa struct {
		Error struct {
			Message, Type string
			Code          any
		} `json:"error"`
	}
	json.Unmarshal(ErrorBody(OpenAI, KindQuota, "used up"), &oa)
	if oa.Error.Message != "used up" || oa.Error.Code != "insufficient_quota" || KindQuota.Status() != 429 {
		t.Fatalf("%+v", oa)
	}
	var an struct {
		Type  string
		Error struct{ Type, Message string }
	}
	json.Unmarshal(ErrorBody(Anthropic, KindAuth, "no"), &an)
	if an.Type != "error" || an.Error.Type != "authentication_error" || KindAuth.Status() != 401 {
		t.Fatalf("%+v", an)
	}
	if ev := string(ErrorEvent(Anthropic, KindUpstream, "x")); !strings.HasPrefix(ev, "event: error\ndata: {") || !strings.HasSuffix(ev, "}\n\n") {
		t.Fatalf("event %q", ev)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:x"}}]}]}`)
	f.Add(`{"model":"m","max_tokens":5,"stream":true}`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range []Dialect{OpenAI, Anthropic} {
			r, err := Parse(d, []byte(s))
			if err != nil {
				continue
			}
			if r.InputBound < BaseOverhead || r.Model == "" {
				t.Fatalf("%+v", r)
			}
			var v map[string]any
			if json.Unmarshal(r.Body(Options{Model: "x"}), &v) != nil || v["model"] != "x" {
				t.Fatal("rewritten body is not JSON with the model")
			}
		}
	})
}

// TestModelsShapes: the list and one model, as each vendor's SDK pages and reads
// them; the request id in the header each SDK reads.
func TestModelsShapes(t *testing.T) {
	m := Model{ID: "gpt", Created: 1700000000, Owner: "openai"}
	for d, want := range map[Dialect][2]string{
		OpenAI:    {`{"data":[{"created":1700000000,"id":"gpt","object":"model","owned_by":"openai"}],"object":"list"}`, `{"created":1700000000,"id":"gpt","object":"model","owned_by":"openai"}`},
		Anthropic: {`{"data":[{"created_at":"2023-11-14T22:13:20Z","display_name":"gpt","id":"gpt","type":"model"}],"first_id":"gpt","has_more":false,"last_id":"gpt"}`, `{"created_at":"2023-11-14T22:13:20Z","display_name":"gpt","id":"gpt","type":"model"}`},
	} {
		if got := string(Models(d, []Model{m})); got != want[0] {
			t.Errorf("%s list: %s", d, got)
		}
		if got := string(ModelBody(d, m)); got != want[1] {
			t.Errorf("%s model: %s", d, got)
		}
	}
	if RequestIDHeader(OpenAI) != "X-Request-Id" || RequestIDHeader(Anthropic) != "Request-Id" {
		t.Error("request id headers")
	}
}
