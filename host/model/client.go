package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferryhq/ferry/buildinfo"
)

// Kinds of provider: the wire format spoken.
const (
	KindOpenAI    = "openai"
	KindAnthropic = "anthropic"
)

// Kinds lists every kind.
var Kinds = []string{KindOpenAI, KindAnthropic}

// Stop reasons every provider maps its vendor's onto. A reason a vendor adds later
// passes through unchanged.
const (
	StopEndTurn   = "end_turn"
	StopToolUse   = "tool_use"
	StopMaxTokens = "max_tokens" // cut by the length limit (OpenAI's "length")
	StopRefusal   = "refusal"    // the model refused (OpenAI's delta.refusal, Anthropic's stop_reason)
	// StopContentFilter: the vendor's filter withheld or cut the answer.
	StopContentFilter = "content_filter"
	// StopPauseTurn: Anthropic paused a long turn of its server tools; sending the
	// conversation back lets it go on.
	StopPauseTurn = "pause_turn"
)

// DefaultContextWindow is the context window assumed for a kind when the
// configuration names none. Local servers often run far smaller windows: set it.
func DefaultContextWindow(kind string) int {
	if kind == KindAnthropic {
		return 200_000
	}
	return 128_000
}

// DefaultMaxTokens is the answer length asked for when neither the request nor the
// configuration names one. Anthropic requires a value; OpenAI-compatible servers
// choose their own when none is sent (0).
func DefaultMaxTokens(kind string) int {
	if kind == KindAnthropic {
		return 4096
	}
	return 0
}

// DefaultIdleTimeout aborts a stream that has sent nothing, not even a keep-alive,
// for this long: a hung connection otherwise holds a run for ever.
const DefaultIdleTimeout = 5 * time.Minute

// Config is everything a provider needs to make calls.
type Config struct {
	ID            string
	Kind          string // KindOpenAI or KindAnthropic
	BaseURL       string // OpenAI-compatible: up to /v1 (…/chat/completions is added); Anthropic: the host (…/v1/messages is added)
	Model         string
	ContextWindow int // 0: DefaultContextWindow(Kind)
	MaxTokens     int // 0: DefaultMaxTokens(Kind)
	// TextOnly: the model takes no images (set for text-only models: many local
	// ones, DeepSeek's chat models); images are left out of every request.
	TextOnly bool
	APIKey   string
	// APIKeyEnv names the variable the key came from, for error messages only.
	APIKeyEnv string
	// HTTPClient defaults to one without an overall timeout (answers stream for
	// minutes); IdleTimeout bounds silence instead. Negative disables it.
	HTTPClient  *http.Client
	IdleTimeout time.Duration
	Retry       *Retry // nil: DefaultRetry
	// Options are the stored request options; auto ones are detected from the
	// base URL and the model, and learnt from a vendor's refusal of one.
	Options OptionSettings
}

// wire is what differs between the vendors' formats.
type wire interface {
	endpoint(base string, o Options) string
	// vendorHeaders sets the vendor's own headers, and the key ("" for none)
	// where the vendor looks for it.
	vendorHeaders(h http.Header, key string, o Options)
	encode(c *client, req Request, o Options) ([]byte, error)
	// decode reads the response of a 200. It sends text to emit and returns the
	// assembled answer once the vendor said the answer is finished; a stream that
	// ends before that, or carries an error, is an error.
	decode(c *client, resp *http.Response, emit func(string)) (*Response, error)
	// adapt is the options to try again with when the vendor refused a request for
	// an option that detection got wrong (only auto ones change), with what
	// changed; ok false when the refusal is not about one.
	adapt(o Options, s OptionSettings, e *Error) (next Options, change string, ok bool)
}

type client struct {
	info     Info
	key      string
	keyEnv   string
	idle     time.Duration
	hc       *http.Client
	retry    Retry
	wire     wire
	settings OptionSettings

	mu      sync.Mutex
	opts    Options
	learned []string // options changed after a vendor refused them
}

// options are the options in force.
func (c *client) options() Options {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opts
}

// New makes a provider from a configuration, checking it first.
func New(cfg Config) (Provider, error) {
	if err := ValidateConfig(cfg.ID, cfg.Kind, cfg.BaseURL, cfg.Model); err != nil {
		return nil, err
	}
	if err := cfg.Options.Check(); err != nil {
		return nil, err
	}
	c := &client{
		info: Info{ID: cfg.ID, Kind: cfg.Kind, BaseURL: strings.TrimRight(cfg.BaseURL, "/"), Model: cfg.Model,
			ContextWindow: cfg.ContextWindow, TextOnly: cfg.TextOnly, MaxTokens: cfg.MaxTokens},
		key: cfg.APIKey, keyEnv: cfg.APIKeyEnv, idle: cfg.IdleTimeout,
		hc: cfg.HTTPClient, retry: DefaultRetry, settings: cfg.Options,
	}
	c.opts = DetectOptions(cfg.Kind, c.info.BaseURL, cfg.Model, cfg.Options)
	if c.info.ContextWindow <= 0 {
		c.info.ContextWindow = DefaultContextWindow(cfg.Kind)
	}
	if c.info.MaxTokens <= 0 {
		c.info.MaxTokens = DefaultMaxTokens(cfg.Kind)
	}
	if c.idle == 0 {
		c.idle = DefaultIdleTimeout
	}
	if c.hc == nil {
		c.hc = defaultHTTPClient()
	}
	if cfg.Retry != nil {
		c.retry = *cfg.Retry
	}
	if cfg.Kind == KindAnthropic {
		c.wire = anthropicWire{}
	} else {
		c.wire = openaiWire{}
	}
	return c, nil
}

// maxTokens is the length to ask for: the request's, else the provider's.
func (c *client) maxTokens(req Request) int {
	if req.MaxTokens > 0 {
		return req.MaxTokens
	}
	return c.info.MaxTokens
}

var (
	httpOnce   sync.Once
	httpShared *http.Client
)

// defaultHTTPClient shares one connection pool among providers; it has no overall
// timeout because a streamed answer may rightly take minutes.
func defaultHTTPClient() *http.Client {
	httpOnce.Do(func() {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = 0
		httpShared = &http.Client{Transport: t}
	})
	return httpShared
}

// validationError is a refusal of a provider's configuration: the user's input, not
// a failure of the host.
type validationError struct{ msg string }

func (e *validationError) Error() string { return e.msg }

func invalidf(format string, args ...any) error {
	return &validationError{fmt.Sprintf(format, args...)}
}

// ValidateConfig checks the fields every provider needs, with errors that say what
// to change.
func ValidateConfig(id, kind, baseURL, modelName string) error {
	if !validID(id) {
		return invalidf("provider id %q: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	if kind != KindOpenAI && kind != KindAnthropic {
		return invalidf("unknown provider kind %q: use openai (OpenAI, DeepSeek, Qwen, Ollama, vLLM, llama.cpp, LM Studio…) or anthropic", kind)
	}
	if err := CheckBaseURL(baseURL); err != nil {
		return err
	}
	if strings.TrimSpace(modelName) == "" {
		return invalidf("a model name is required (--model), e.g. gpt-4o-mini, deepseek-chat, qwen2.5:7b or claude-sonnet-4-5")
	}
	return nil
}

func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case i > 0 && (r == '.' || r == '_' || r == '-'):
		default:
			return false
		}
	}
	return true
}

func (c *client) Info() Info {
	i := c.info
	i.Options = c.options()
	return i
}

// Learned lists the options changed since the provider was opened because the
// vendor refused them, each with why.
func (c *client) Learned() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.learned...)
}

func (c *client) Stream(ctx context.Context, req Request, onDelta func(Delta), onAttempt func(Attempt)) (*Response, error) {
	if c.info.TextOnly {
		req.Messages = WithoutImages(req.Messages)
	}
	for adapted := 0; ; adapted++ {
		o := c.options()
		body, err := c.wire.encode(c, req, o)
		if err != nil {
			return nil, &Error{Provider: c.info.ID, Message: "encoding the request: " + err.Error(), Err: err}
		}
		url := c.wire.endpoint(c.info.BaseURL, o)
		resp, err := c.do(ctx, onAttempt, func(ctx context.Context) (*Response, bool, error) {
			return c.try(ctx, url, body, o, onDelta)
		})
		var me *Error
		if err == nil || adapted >= 3 || !errors.As(err, &me) || me.Retryable {
			return resp, err
		}
		next, change, ok := c.wire.adapt(o, c.settings, me)
		if !ok {
			return nil, err
		}
		// The refused request made no answer: the same call goes again with the
		// option the vendor wants, and the provider keeps it from now on.
		c.mu.Lock()
		c.opts = next
		c.learned = append(c.learned, change)
		c.mu.Unlock()
	}
}

// WithoutImages returns msgs with no message carrying images (a copy only when one
// did), for models that take none.
func WithoutImages(msgs []Message) []Message {
	out := msgs
	for i, m := range msgs {
		if len(m.Images) == 0 {
			continue
		}
		if &out[0] == &msgs[0] {
			out = append([]Message(nil), msgs...)
		}
		out[i].Images = nil
	}
	return out
}

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// headers are every request's headers, the key's included: the one place they are
// set.
func (c *client) headers(h http.Header, o Options) {
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	h.Set("User-Agent", "ferry/"+buildinfo.Version)
	c.wire.vendorHeaders(h, c.key, o)
}

func (c *client) try(parent context.Context, url string, body []byte, o Options, onDelta func(Delta)) (_ *Response, emitted bool, _ error) {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, false, &Error{Provider: c.info.ID, Message: err.Error(), Err: err}
	}
	c.headers(hreq.Header, o)
	if id := TraceID(parent); id != "" {
		hreq.Header.Set(TraceHeader, id)
	}
	resp, err := c.hc.Do(hreq)
	if err != nil {
		if parent.Err() != nil {
			return nil, false, parent.Err()
		}
		return nil, false, &Error{Provider: c.info.ID, Message: fmt.Sprintf("cannot reach %s: %v", url, unwrapURLError(err)),
			Fix: "check that the server is running and that the base URL is right", Retryable: true, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		ve := parseVendorError(b)
		if ve.msg == "" {
			ve.msg = strings.TrimSpace(string(b))
			if len(ve.msg) > 500 || ve.msg == "" || strings.HasPrefix(ve.msg, "<") {
				ve.msg = http.StatusText(resp.StatusCode)
			}
		}
		return nil, false, c.failure(resp.StatusCode, ve.typ, ve.msg, parseRetryAfter(resp.Header, time.Now()))
	}
	if err := c.checkBody(resp); err != nil {
		return nil, false, err
	}
	if c.idle > 0 {
		// Every read that returns resets the watchdog; silence past the limit
		// cancels the request, which unblocks the read.
		w := time.AfterFunc(c.idle, func() { cancel(errIdle) })
		defer w.Stop()
		resp.Body = &idleBody{ReadCloser: resp.Body, reset: func() { w.Reset(c.idle) }}
	}
	emit := func(s string) {
		if s == "" {
			return
		}
		emitted = true
		if onDelta != nil {
			onDelta(Delta{Text: s})
		}
	}
	out, err := c.wire.decode(c, resp, emit)
	if err == nil {
		err = c.checkAnswer(out)
	}
	if err != nil {
		if parent.Err() != nil {
			return nil, emitted, parent.Err()
		}
		if errors.Is(context.Cause(ctx), errIdle) {
			return nil, emitted, &Error{Provider: c.info.ID, Message: fmt.Sprintf("the stream sent nothing for %s", c.idle),
				Fix: "the server may be overloaded or the connection stuck; try again", Retryable: true, Err: errIdle}
		}
		var me *Error
		if !errors.As(err, &me) {
			err = &Error{Provider: c.info.ID, Message: "the answer stream broke before it was complete: " + err.Error(),
				Fix: "usually a dropped connection or a proxy timeout; try again", Retryable: true, Err: err}
		}
		return nil, emitted, err
	}
	return out, emitted, nil
}

var errIdle = errors.New("stream idle timeout")

type idleBody struct {
	io.ReadCloser
	reset func()
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.reset()
	}
	return n, err
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// marshal encodes without HTML escaping: the model should see "&" and "<" in tool
// arguments and results as they are, not as \u0026.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// isJSON reports whether a 200 came back as one JSON document rather than a stream:
// a server that ignores "stream": true.
func isJSON(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "application/json"
}

// checkBody refuses a 200 that is neither an event stream nor JSON: a captive portal's
// or a proxy's page, which would otherwise read as an empty stream.
func (c *client) checkBody(resp *http.Response) error {
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if ct == "" || mt == "text/event-stream" || mt == "application/json" || mt == "application/x-ndjson" {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
	return &Error{Provider: c.info.ID, Status: resp.StatusCode, Type: "not_an_answer",
		Message: fmt.Sprintf("the server answered 200 with %s, not an event stream: %.200q", mt, strings.TrimSpace(string(b))),
		Fix:     "the base URL reaches something other than the model API (a login page, a proxy, a web server): check it and any proxy in between"}
}

// checkAnswer refuses an answer that finished with nothing in it: no text, no tool
// call, no refusal. Shown as completed, it would look like the model had nothing to
// say when the server failed without saying so; a new try usually answers.
func (c *client) checkAnswer(r *Response) error {
	if strings.TrimSpace(r.Text) != "" || len(r.ToolCalls) > 0 || r.Refusal != "" {
		return nil
	}
	switch r.StopReason {
	case StopEndTurn, StopToolUse:
		msg := "the model finished with an empty answer (no text, no tool call)"
		if r.Usage.OutputTokens > 0 {
			msg += fmt.Sprintf(" after %d output tokens", r.Usage.OutputTokens)
		}
		return &Error{Provider: c.info.ID, Type: "empty_answer", Message: msg, Retryable: true,
			Fix: "try again; if it keeps happening, the server may be dropping the answer (a template or parser problem on local servers) or the model may need a larger --max-tokens"}
	}
	return nil
}

// vendorErr is an error body, read from any of the shapes servers use.
type vendorErr struct {
	code int // a numeric code or status the body carries (vLLM, llama.cpp, Azure), 0 when none
	typ  string
	msg  string
}

// parseVendorError reads the error shapes seen in the wild: OpenAI's and Anthropic's
// {"error": {"type"|"code", "message"}}, Ollama's {"error": "…"}, vLLM's and
// Mistral's bare {"object": "error", "message", "type", "code"} (Mistral's message
// may be a validation object), llama.cpp's {"code", "message", "type"}, and
// {"message"} or {"detail"} from other servers.
func parseVendorError(body []byte) vendorErr {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(body, &v) != nil {
		return vendorErr{}
	}
	if len(v.Error) > 0 && string(v.Error) != "null" {
		var s string
		if json.Unmarshal(v.Error, &s) == nil {
			return vendorErr{msg: s}
		}
		if inner := parseVendorError(v.Error); inner.msg != "" || inner.typ != "" {
			return inner
		}
	}
	e := vendorErr{typ: v.Type, msg: flatText(v.Message)}
	if e.msg == "" {
		e.msg = flatText(v.Detail)
	}
	var code string
	var n int
	switch {
	case json.Unmarshal(v.Code, &n) == nil:
		e.code = n
	case json.Unmarshal(v.Code, &code) == nil && code != "":
		if num, err := strconv.Atoi(code); err == nil {
			e.code = num
		} else {
			e.typ = code // OpenAI's code (insufficient_quota…) says more than its type
		}
	}
	return e
}

// flatText is a message that may be a string, or an object or list (a validation
// error's detail), as one line.
func flatText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return ""
	}
	out := b.String()
	if len(out) > 500 {
		out = out[:500] + "…"
	}
	return out
}
