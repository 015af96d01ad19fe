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

// Stop reasons every provider maps its vendor's onto. Others a vendor may give
// (content_filter, refusal, pause_turn…) pass through unchanged.
const (
	StopEndTurn   = "end_turn"
	StopToolUse   = "tool_use"
	StopMaxTokens = "max_tokens"
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
}

// wire is what differs between the vendors' formats.
type wire interface {
	endpoint(base string) string
	setHeaders(h http.Header, key string)
	encode(c *client, req Request) ([]byte, error)
	// decode reads the response of a 200. It sends text to emit and returns the
	// assembled answer.
	decode(c *client, resp *http.Response, emit func(string)) (*Response, error)
	// errorOf reads a vendor error body: its type or code and its message.
	errorOf(body []byte) (typ, msg string)
}

type client struct {
	info      Info
	key       string
	keyEnv    string
	maxTokens int
	idle      time.Duration
	url       string
	hc        *http.Client
	retry     Retry
	wire      wire
}

// New makes a provider from a configuration, checking it first.
func New(cfg Config) (Provider, error) {
	if err := ValidateConfig(cfg.ID, cfg.Kind, cfg.BaseURL, cfg.Model); err != nil {
		return nil, err
	}
	c := &client{
		info: Info{ID: cfg.ID, Kind: cfg.Kind, BaseURL: strings.TrimRight(cfg.BaseURL, "/"), Model: cfg.Model,
			ContextWindow: cfg.ContextWindow, TextOnly: cfg.TextOnly},
		key: cfg.APIKey, keyEnv: cfg.APIKeyEnv, maxTokens: cfg.MaxTokens, idle: cfg.IdleTimeout,
		hc: cfg.HTTPClient, retry: DefaultRetry,
	}
	if c.info.ContextWindow <= 0 {
		c.info.ContextWindow = DefaultContextWindow(cfg.Kind)
	}
	if c.maxTokens <= 0 {
		c.maxTokens = DefaultMaxTokens(cfg.Kind)
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
	c.url = c.wire.endpoint(c.info.BaseURL)
	return c, nil
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
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalidf("base URL %q: give an http:// or https:// URL, e.g. https://api.openai.com/v1, http://localhost:11434/v1 or https://api.anthropic.com", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return invalidf("base URL %q: leave out the query and fragment; the path of the API call is added to it", baseURL)
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

func (c *client) Info() Info { return c.info }

func (c *client) Stream(ctx context.Context, req Request, onDelta func(Delta), onAttempt func(Attempt)) (*Response, error) {
	if c.info.TextOnly {
		req.Messages = WithoutImages(req.Messages)
	}
	body, err := c.wire.encode(c, req)
	if err != nil {
		return nil, &Error{Provider: c.info.ID, Message: "encoding the request: " + err.Error(), Err: err}
	}
	return c.do(ctx, onAttempt, func(ctx context.Context) (*Response, bool, error) {
		return c.try(ctx, body, onDelta)
	})
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

func (c *client) try(parent context.Context, body []byte, onDelta func(Delta)) (_ *Response, emitted bool, _ error) {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, false, &Error{Provider: c.info.ID, Message: err.Error(), Err: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	hreq.Header.Set("User-Agent", "ferry/"+buildinfo.Version)
	c.wire.setHeaders(hreq.Header, c.key)
	resp, err := c.hc.Do(hreq)
	if err != nil {
		if parent.Err() != nil {
			return nil, false, parent.Err()
		}
		return nil, false, &Error{Provider: c.info.ID, Message: fmt.Sprintf("cannot reach %s: %v", c.url, unwrapURLError(err)),
			Fix: "check that the server is running and that the base URL is right", Retryable: true, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		typ, msg := c.wire.errorOf(b)
		if msg == "" {
			msg = strings.TrimSpace(string(b))
			if len(msg) > 500 || msg == "" || strings.HasPrefix(msg, "<") {
				msg = http.StatusText(resp.StatusCode)
			}
		}
		return nil, false, &Error{Provider: c.info.ID, Status: resp.StatusCode, Type: typ, Message: msg,
			Fix: fixFor(resp.StatusCode, c), Retryable: retryableStatus(resp.StatusCode),
			RetryAfter: parseRetryAfter(resp.Header, time.Now())}
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

// streamError is a vendor error that arrived inside a 200 stream.
func (c *client) streamError(typ, msg string) *Error {
	retry := false
	switch typ {
	case "overloaded_error", "api_error", "rate_limit_error", "server_error", "timeout_error":
		retry = true
	}
	if msg == "" {
		msg = "the vendor reported an error in the middle of the answer"
	}
	return &Error{Provider: c.info.ID, Type: typ, Message: msg, Retryable: retry,
		Fix: "the vendor failed while answering; try again (it retries by itself when nothing was shown yet)"}
}

// vendorError reads the error shapes seen in the wild: OpenAI's and Anthropic's
// {"error": {"type"|"code", "message"}}, Ollama's {"error": "…"}, and
// {"message"} or {"detail"} from other servers.
func vendorError(body []byte) (typ, msg string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) != nil {
		return "", ""
	}
	if len(v.Error) > 0 {
		var s string
		if json.Unmarshal(v.Error, &s) == nil {
			return "", s
		}
		var e struct {
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
			Message string          `json:"message"`
		}
		if json.Unmarshal(v.Error, &e) == nil {
			typ = e.Type
			var code string
			if json.Unmarshal(e.Code, &code) == nil && code != "" {
				typ = code
			}
			return typ, e.Message
		}
	}
	if v.Message != "" {
		return "", v.Message
	}
	if len(v.Detail) > 0 {
		var s string
		if json.Unmarshal(v.Detail, &s) == nil {
			return "", s
		}
		return "", string(v.Detail)
	}
	return "", ""
}
