// Package dialect knows the two wire formats the gateway serves and calls: OpenAI's
// Chat Completions and Anthropic's Messages. It reads what the gateway needs from a
// request (model, streaming, the answer's length limit, a bound on its tokens),
// rewrites the model name, writes errors and in-stream error events as each
// vendor does, and reads usage from answers, whole or streamed.
//
// A request reaches an upstream of the other format through the translation of
// translate.go; one of the same format passes through untouched.
package dialect

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Dialect is a wire format.
type Dialect string

// The two formats; their names are the upstream kinds.
const (
	OpenAI    Dialect = "openai"
	Anthropic Dialect = "anthropic"
)

// AnthropicVersion is sent upstream when the client named none.
const AnthropicVersion = "2023-06-01"

// Token bounds used to reserve quota before a call. Byte-level tokenizers never
// make more tokens than the text has bytes, so a request's bytes bound its text's
// tokens; images are billed by size, not bytes, and no current vendor bills one
// image more than this; tools bring a hidden system prompt of their own.
const (
	ImageTokenBound = 3000
	ToolsOverhead   = 1024
	BaseOverhead    = 64
)

// Request is what the gateway reads of a client's request.
type Request struct {
	Dialect   Dialect
	Model     string
	Stream    bool
	MaxTokens int64 // the answer's limit the client set; 0: none
	// IncludeUsage: an OpenAI client asked for the usage chunk itself.
	IncludeUsage bool
	Images       int
	Tools        bool
	// Choices is OpenAI's n: answers asked for, each up to the answer's limit.
	Choices int64
	// InputBound is an upper bound of the request's input tokens.
	InputBound int64

	fields map[string]json.RawMessage
	size   int
}

// BadRequest is a request the gateway refuses before any upstream sees it.
type BadRequest struct{ Msg string }

func (e *BadRequest) Error() string { return e.Msg }

func bad(format string, args ...any) error { return &BadRequest{fmt.Sprintf(format, args...)} }

// Parse reads a request body of dialect d.
func Parse(d Dialect, body []byte) (*Request, error) {
	r := &Request{Dialect: d, size: len(body), Choices: 1}
	if err := json.Unmarshal(body, &r.fields); err != nil || r.fields == nil {
		return nil, bad("the request body is not a JSON object")
	}
	if err := json.Unmarshal(r.fields["model"], &r.Model); err != nil || r.Model == "" {
		return nil, bad("model: a model name is required")
	}
	if raw, ok := r.fields["stream"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &r.Stream); err != nil {
			return nil, bad("stream: must be true or false")
		}
	}
	readInt := func(name string) error {
		raw, ok := r.fields[name]
		if !ok || string(raw) == "null" {
			return nil
		}
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil || n < 0 {
			return bad("%s: must be a whole number of tokens", name)
		}
		r.MaxTokens = max(r.MaxTokens, n)
		return nil
	}
	if err := readInt("max_tokens"); err != nil {
		return nil, err
	}
	if d == OpenAI {
		if err := readInt("max_completion_tokens"); err != nil {
			return nil, err
		}
		r.Choices = 1
		if raw, ok := r.fields["n"]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &r.Choices); err != nil || r.Choices < 1 || r.Choices > 128 {
				return nil, bad("n: must be a whole number from 1 to 128")
			}
		}
		if raw, ok := r.fields["stream_options"]; ok {
			var so struct {
				IncludeUsage bool `json:"include_usage"`
			}
			json.Unmarshal(raw, &so)
			r.IncludeUsage = so.IncludeUsage
		}
	}
	if raw, ok := r.fields["tools"]; ok && string(raw) != "null" && string(raw) != "[]" {
		r.Tools = true
	}
	imageBytes := 0
	r.Images, imageBytes = countImages(d, r.fields["messages"])
	if d == Anthropic {
		// Anthropic's system may be blocks, but never images.
		if _, ok := r.fields["messages"]; !ok {
			return nil, bad("messages: Field required")
		}
	}
	r.InputBound = int64(len(body)-imageBytes) + int64(r.Images)*ImageTokenBound + BaseOverhead
	if r.Tools {
		r.InputBound += ToolsOverhead
	}
	return r, nil
}

// countImages finds the images of a request and the bytes their inline data takes.
func countImages(d Dialect, messages json.RawMessage) (n, dataBytes int) {
	var msgs []struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(messages, &msgs) != nil {
		return 0, 0
	}
	var walk func(raw json.RawMessage, depth int)
	walk = func(raw json.RawMessage, depth int) {
		if depth > 3 || len(raw) == 0 || raw[0] != '[' {
			return
		}
		var parts []struct {
			Type     string `json:"type"`
			ImageURL *struct {
				URL string `json:"url"`
			} `json:"image_url"`
			Source *struct {
				Data string `json:"data"`
			} `json:"source"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &parts) != nil {
			return
		}
		for _, p := range parts {
			switch {
			case d == OpenAI && p.Type == "image_url" && p.ImageURL != nil:
				n++
				if strings.HasPrefix(p.ImageURL.URL, "data:") {
					dataBytes += len(p.ImageURL.URL)
				}
			case d == Anthropic && p.Type == "image":
				n++
				if p.Source != nil {
					dataBytes += len(p.Source.Data)
				}
			case d == Anthropic && p.Type == "tool_result":
				walk(p.Content, depth+1)
			}
		}
	}
	for _, m := range msgs {
		walk(m.Content, 0)
	}
	return n, dataBytes
}

// Options are the gateway's changes to a request before it goes upstream.
type Options struct {
	Model string // the upstream's name for the model
	// CapTokens, when not 0, lowers the answer's limit to it (or sets it, for an
	// OpenAI request that named none), under a token quota: what a stream does
	// not show (reasoning) is billed too, and only the vendor's own limit bounds
	// it.
	CapTokens int64
}

// Body is the request as the upstream gets it.
func (r *Request) Body(o Options) []byte {
	f := make(map[string]json.RawMessage, len(r.fields)+1)
	for k, v := range r.fields {
		f[k] = v
	}
	f["model"], _ = json.Marshal(o.Model)
	if r.Dialect == OpenAI && r.Stream {
		// The final usage chunk is how the gateway learns what a stream cost; a
		// client that did not ask for it does not see it (Meter hides it).
		so := map[string]json.RawMessage{}
		json.Unmarshal(f["stream_options"], &so)
		so["include_usage"] = json.RawMessage("true")
		f["stream_options"], _ = json.Marshal(so)
	}
	if o.CapTokens > 0 && (r.MaxTokens == 0 || r.MaxTokens > o.CapTokens) {
		n := json.RawMessage(strconv.FormatInt(o.CapTokens, 10))
		switch {
		case r.Dialect == Anthropic:
			f["max_tokens"] = n
		default:
			// The field the client used (OpenAI refuses both at once).
			set := false
			for _, k := range []string{"max_completion_tokens", "max_tokens"} {
				if raw, ok := f[k]; ok && string(raw) != "null" {
					f[k], set = n, true
				}
			}
			if !set {
				f["max_completion_tokens"] = n
			}
		}
	}
	// Written by hand, in the keys' order: the values were valid JSON when
	// parsed, and the encoder would copy each one again to check it.
	keys := make([]string, 0, len(f))
	size := 2
	for k, v := range f {
		keys = append(keys, k)
		size += len(k) + len(v) + 4
	}
	sort.Strings(keys)
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		kb, _ := json.Marshal(k)
		b = append(b, kb...)
		b = append(b, ':')
		b = append(b, f[k]...)
	}
	return append(b, '}')
}

// Endpoint is the URL of the call on an upstream whose base URL is base.
func Endpoint(d Dialect, base string) string {
	base = strings.TrimRight(base, "/")
	if d == Anthropic {
		return strings.TrimSuffix(base, "/v1") + "/v1/messages"
	}
	return base + "/chat/completions"
}

// Headers sets the upstream request's headers: the upstream's key, and of the
// client's headers only those the vendor's API defines for the call. The client's
// own credentials never go upstream.
func Headers(d Dialect, out, client http.Header, key string, stream bool) {
	out.Set("Content-Type", "application/json")
	if stream {
		out.Set("Accept", "text/event-stream")
	} else {
		out.Set("Accept", "application/json")
	}
	if d == Anthropic {
		v := client.Get("anthropic-version")
		if v == "" {
			v = AnthropicVersion
		}
		out.Set("anthropic-version", v)
		if b := client.Values("anthropic-beta"); len(b) > 0 {
			out["Anthropic-Beta"] = append([]string(nil), b...)
		}
		if key != "" {
			out.Set("x-api-key", key)
		}
		return
	}
	if key != "" {
		out.Set("Authorization", "Bearer "+key)
	}
}

// Error kinds the gateway reports, each written in the dialect's own terms.
type Kind int

const (
	KindBadRequest Kind = iota
	KindAuth            // 401: no token, or a wrong one
	KindForbidden       // 403: a model the user may not call, a disabled user
	KindNotFound        // 404: no route for the model, or no such endpoint
	KindTooLarge        // 413
	KindRateLimit       // 429: requests a minute
	KindQuota           // 429: tokens of the day
	KindUpstream        // 502
	KindTimeout         // 504
	KindInternal        // 500
	KindOverloaded      // 503/529 passed on from an upstream
)

// Status is the HTTP status of an error kind: what clients' SDKs retry (429, 5xx)
// and what they do not (400-404).
func (k Kind) Status() int {
	return [...]int{400, 401, 403, 404, 413, 429, 429, 502, 504, 500, 503}[k]
}

// ErrorBody is an error response body in dialect d.
func ErrorBody(d Dialect, k Kind, msg string) []byte {
	var v any
	if d == Anthropic {
		typ := [...]string{"invalid_request_error", "authentication_error", "permission_error", "not_found_error", "request_too_large",
			"rate_limit_error", "rate_limit_error", "api_error", "api_error", "api_error", "overloaded_error"}[k]
		v = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	} else {
		typ := [...]string{"invalid_request_error", "invalid_request_error", "permission_error", "invalid_request_error", "invalid_request_error",
			"requests", "tokens", "server_error", "server_error", "server_error", "server_error"}[k]
		code := [...]any{nil, "invalid_api_key", "model_not_allowed", "model_not_found", "request_too_large",
			"rate_limit_exceeded", "insufficient_quota", "upstream_error", "upstream_timeout", nil, "overloaded"}[k]
		v = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
	}
	b, _ := json.Marshal(v)
	return b
}

// ErrorEvent is the event that ends a stream with an error, as the vendor ends
// its own streams when it fails mid-answer.
func ErrorEvent(d Dialect, k Kind, msg string) []byte {
	body := ErrorBody(d, k, msg)
	if d == Anthropic {
		return []byte("event: error\ndata: " + string(body) + "\n\n")
	}
	return []byte("data: " + string(body) + "\n\n")
}

// Model is one entry of a models listing.
type Model struct {
	ID      string
	Created int64 // Unix seconds
	Owner   string
}

// RequestIDHeader is the response header a dialect's SDKs read the request's id
// from.
func RequestIDHeader(d Dialect) string {
	if d == Anthropic {
		return "Request-Id"
	}
	return "X-Request-Id"
}

func modelObject(d Dialect, m Model) map[string]any {
	if d == Anthropic {
		return map[string]any{"type": "model", "id": m.ID, "display_name": m.ID, "created_at": jsonTime(m.Created)}
	}
	return map[string]any{"id": m.ID, "object": "model", "created": m.Created, "owned_by": m.Owner}
}

// Models is the body of GET /v1/models in dialect d.
func Models(d Dialect, ms []Model) []byte {
	data := make([]any, 0, len(ms))
	for _, m := range ms {
		data = append(data, modelObject(d, m))
	}
	var v any
	if d == Anthropic {
		var first, last any
		if len(ms) > 0 {
			first, last = ms[0].ID, ms[len(ms)-1].ID
		}
		v = map[string]any{"data": data, "has_more": false, "first_id": first, "last_id": last}
	} else {
		v = map[string]any{"object": "list", "data": data}
	}
	b, _ := json.Marshal(v)
	return b
}

// ModelBody is the body of GET /v1/models/{model} in dialect d.
func ModelBody(d Dialect, m Model) []byte {
	b, _ := json.Marshal(modelObject(d, m))
	return b
}
