// Package modeltest serves fake model vendors for tests: an OpenAI-compatible Chat
// Completions server and an Anthropic Messages server, each speaking its vendor's
// real streaming format, scripted turn by turn.
//
// A script is a list of Turns; each request takes the next one. A turn is text
// and/or tool calls, streamed as the vendor would (text and tool arguments cut into
// pieces of 3 to 7 bytes, several tool calls in one turn, usage at the end), or a
// failure (a status with the vendor's error body and Retry-After, a stream that
// breaks, an error event in the stream, a slow stream). Every request is recorded,
// decoded, so a test can check what the model was sent. The servers refuse what the
// real vendors refuse (a tool result that answers no call, a call left unanswered,
// a missing anthropic-version or max_tokens, a wrong key), with the vendors' error
// bodies.
package modeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Kinds of fake server, as model.Kind* names them.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
)

// Call is a tool call a turn makes.
type Call struct {
	ID        string // "" : one is made up in the vendor's style
	Name      string
	Arguments string // JSON text, sent as the model would, in pieces
}

// Turn is one scripted answer.
type Turn struct {
	Text      string
	Reasoning string // streamed first as reasoning_content (OpenAI) or a thinking block (Anthropic): clients must ignore it
	ToolCalls []Call
	// StopReason is the vendor's own value (OpenAI: stop, tool_calls, length;
	// Anthropic: end_turn, tool_use, max_tokens); "" derives it from the turn.
	StopReason   string
	InputTokens  int // 0: estimated from the request's size
	OutputTokens int // 0: estimated from the answer's size
	CachedTokens int // of the input, read from the prompt cache

	Delay      time.Duration // before the response starts: a model taking its time
	ChunkDelay time.Duration // between streamed events: a slow stream

	// Status, when not 0 or 200, fails the request with the vendor's error body.
	Status       int
	ErrorType    string // the vendor's error type ("" : the usual one for Status)
	ErrorMessage string // "" : the vendor's usual message for Status
	RetryAfter   string // the Retry-After header, e.g. "1" or an HTTP date
	Header       http.Header

	// BreakAfter > 0 cuts the connection after that many streamed events, as a
	// dropped connection or a proxy would.
	BreakAfter int
	// StreamError sends the vendor's in-stream error event after the text and
	// ends the stream there (Anthropic: overloaded_error; OpenAI: server_error).
	StreamError bool
}

// Text is a turn that answers with text.
func Text(s string) Turn { return Turn{Text: s} }

// Tools is a turn that calls tools; name and arguments alternate:
// Tools("web_fetch", `{"url":"…"}`, "create_task", `{"subject":"…"}`).
func Tools(nameArgs ...string) Turn {
	var t Turn
	for i := 0; i+1 < len(nameArgs); i += 2 {
		t.ToolCalls = append(t.ToolCalls, Call{Name: nameArgs[i], Arguments: nameArgs[i+1]})
	}
	return t
}

// Fail is a turn that fails with status, and a Retry-After when retryAfter is not "".
func Fail(status int, retryAfter string) Turn { return Turn{Status: status, RetryAfter: retryAfter} }

// Request is one request received, decoded into a form shared by both vendors.
// System instructions (OpenAI's system/developer messages, Anthropic's system field)
// are in System, not in Messages; every other message is kept as the vendor got it,
// one for one, so a test can check how turns were merged.
type Request struct {
	N      int // 1 for the first request
	Path   string
	Header http.Header
	Body   json.RawMessage // as received

	Model        string
	System       string
	MaxTokens    int
	Stream       bool
	IncludeUsage bool // OpenAI's stream_options.include_usage
	Messages     []Message
	Tools        []Tool

	Status int // what the fake answered: 200, or the failure's status
	// Aborted: the client went away before the answer's end.
	Aborted bool
}

// Message is one message of a request.
type Message struct {
	Role        string // the vendor's role: user, assistant, tool
	Text        string // every text part, joined by "\n"
	Images      []string
	ToolCalls   []Call
	ToolResults []ToolResult
	// Blocks are the content parts' types in order (Anthropic: "text",
	// "tool_result", "tool_use", "image"; OpenAI: "text", "image_url" when the
	// content is a list).
	Blocks []string
}

// ToolResult is the answer to one tool call sent back to the model.
type ToolResult struct {
	CallID  string
	Content string
	Images  int
	IsError bool
}

// Tool is a tool offered to the model.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Server is a fake vendor.
type Server struct {
	Kind string
	// URL is the base URL to configure a provider with: …/v1 for OpenAI (the
	// client adds /chat/completions), the bare host for Anthropic (it adds
	// /v1/messages).
	URL   string
	Model string // the model name the fake reports when the request named none

	srv *httptest.Server

	mu      sync.Mutex
	script  []Turn
	respond func(Request) Turn
	key     string
	reqs    []Request
	seed    uint64
	cache   promptCache
	// ReasoningRequired makes the OpenAI fake refuse, as DeepSeek's thinking mode
	// does, a history whose tool-calling assistant turns lack reasoning_content.
	reasoningRequired bool
}

// RequireReasoning makes the OpenAI fake behave as DeepSeek's thinking mode: a
// request whose assistant tool-call turns lack reasoning_content is refused with
// DeepSeek's 400.
func (s *Server) RequireReasoning() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reasoningRequired = true
}

// NewOpenAI starts an OpenAI-compatible fake serving turns in order.
func NewOpenAI(tb testing.TB, turns ...Turn) *Server { return New(tb, OpenAI, turns...) }

// NewAnthropic starts an Anthropic Messages fake serving turns in order.
func NewAnthropic(tb testing.TB, turns ...Turn) *Server { return New(tb, Anthropic, turns...) }

// New starts a fake of kind (OpenAI or Anthropic); it closes when the test ends.
func New(tb testing.TB, kind string, turns ...Turn) *Server {
	if kind != OpenAI && kind != Anthropic {
		tb.Fatalf("modeltest: unknown kind %q", kind)
	}
	s := &Server{Kind: kind, script: append([]Turn(nil), turns...), seed: 1, Model: "fake-model"}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	if kind == OpenAI {
		s.URL += "/v1"
	}
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Add appends turns to the script.
func (s *Server) Add(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, turns...)
}

// SetKey makes the server require this API key, answering the vendor's 401
// otherwise. "" (the default) accepts any key or none.
func (s *Server) SetKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// SetResponder answers requests once the script is used up: for concurrent callers
// (sub-agents), whose order is not known, it decides from the request. Without one,
// a request beyond the script gets a 400 that says so.
func (s *Server) SetResponder(fn func(Request) Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = fn
}

// SetSeed changes how texts and arguments are cut into pieces.
func (s *Server) SetSeed(seed uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seed = seed
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Last returns the latest request (the zero Request when none came).
func (s *Server) Last() Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		return Request{}
	}
	return s.reqs[len(s.reqs)-1]
}

// Remaining says how many scripted turns are left.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	req := Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	var verr *vendorErr
	if err != nil {
		verr = &vendorErr{400, "invalid_request_error", "could not read the body: " + err.Error(), ""}
	}
	if verr == nil {
		if s.Kind == OpenAI {
			verr = decodeOpenAI(&req)
		} else {
			verr = decodeAnthropic(&req)
		}
	}
	s.mu.Lock()
	req.N = len(s.reqs) + 1
	idx := len(s.reqs)
	s.reqs = append(s.reqs, req)
	key, seed := s.key, s.seed
	s.mu.Unlock()
	setStatus := func(code int) {
		s.mu.Lock()
		s.reqs[idx].Status = code
		s.mu.Unlock()
	}

	if e := s.checkPath(r); e != nil {
		verr = e
	} else if e := s.checkAuth(r, key); e != nil {
		verr = e
	} else if verr == nil && s.Kind == OpenAI && s.reasoningRequiredNow() && LacksReasoning(body) {
		verr = &vendorErr{400, "invalid_request_error", "The reasoning_content in the thinking mode must be passed back to the API.", "invalid_request_error"}
	}
	if verr != nil {
		setStatus(verr.status)
		s.writeError(w, verr, nil)
		return
	}
	turn, ok := s.next(req)
	if !ok {
		setStatus(400)
		s.writeError(w, &vendorErr{400, "invalid_request_error",
			fmt.Sprintf("modeltest: request %d arrived but the script has no turn left (add turns, or SetResponder)", req.N), ""}, nil)
		return
	}
	if turn.Delay > 0 {
		select {
		case <-time.After(turn.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if turn.Status != 0 && turn.Status != http.StatusOK {
		setStatus(turn.Status)
		e := s.defaultError(turn.Status, req.Model)
		if turn.ErrorType != "" {
			e.typ = turn.ErrorType
		}
		if turn.ErrorMessage != "" {
			e.msg = turn.ErrorMessage
		}
		h := turn.Header.Clone()
		if turn.RetryAfter != "" {
			if h == nil {
				h = http.Header{}
			}
			h.Set("Retry-After", turn.RetryAfter)
		}
		s.writeError(w, e, h)
		return
	}
	setStatus(http.StatusOK)
	for k, v := range turn.Header {
		w.Header()[k] = v
	}
	if !req.Stream {
		// A client that did not ask for a stream gets the whole answer as one
		// JSON document, as the vendors answer.
		writeWhole(w, s.Kind, req, turn, s.Model)
		return
	}
	defer func() {
		if r.Context().Err() != nil {
			s.mu.Lock()
			s.reqs[idx].Aborted = true
			s.mu.Unlock()
		}
	}()
	st := &streamer{w: w, r: r, turn: turn, rng: rand.New(rand.NewPCG(seed, uint64(req.N)))}
	st.flusher, _ = w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	st.flush()
	if s.Kind == OpenAI {
		streamOpenAI(st, req, s.Model)
	} else {
		s.mu.Lock()
		split := s.cache.use(body, time.Now())
		s.mu.Unlock()
		streamAnthropic(st, req, s.Model, split)
	}
}

func (s *Server) reasoningRequiredNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reasoningRequired
}

// LacksReasoning reports whether an OpenAI request body has an assistant message
// with tool calls and no reasoning_content: what DeepSeek's thinking mode refuses.
func LacksReasoning(body []byte) bool {
	var v struct {
		Messages []struct {
			Role             string            `json:"role"`
			ToolCalls        []json.RawMessage `json:"tool_calls"`
			ReasoningContent *string           `json:"reasoning_content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &v) != nil {
		return false
	}
	for _, m := range v.Messages {
		if m.Role == "assistant" && len(m.ToolCalls) > 0 && m.ReasoningContent == nil {
			return true
		}
	}
	return false
}

func (s *Server) next(req Request) (Turn, bool) {
	s.mu.Lock()
	if len(s.script) > 0 {
		t := s.script[0]
		s.script = s.script[1:]
		s.mu.Unlock()
		return t, true
	}
	fn := s.respond
	s.mu.Unlock()
	if fn == nil {
		return Turn{}, false
	}
	return fn(req), true
}

func (s *Server) checkPath(r *http.Request) *vendorErr {
	want := "/v1/chat/completions"
	if s.Kind == Anthropic {
		want = "/v1/messages"
	}
	if r.Method != http.MethodPost || r.URL.Path != want {
		if s.Kind == Anthropic {
			return &vendorErr{404, "not_found_error", "Not Found", ""}
		}
		return &vendorErr{404, "invalid_request_error", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), ""}
	}
	return nil
}

func (s *Server) checkAuth(r *http.Request, key string) *vendorErr {
	if s.Kind == Anthropic {
		if r.Header.Get("anthropic-version") == "" {
			return &vendorErr{400, "invalid_request_error", "anthropic-version: header is required", ""}
		}
		if key == "" {
			return nil
		}
		got := r.Header.Get("x-api-key")
		if got == "" {
			return &vendorErr{401, "authentication_error", "x-api-key header is required", ""}
		}
		if got != key {
			return &vendorErr{401, "authentication_error", "invalid x-api-key", ""}
		}
		return nil
	}
	if key == "" {
		return nil
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || got == "" {
		return &vendorErr{401, "invalid_request_error", "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", ""}
	}
	if got != key {
		return &vendorErr{401, "invalid_request_error", fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.", maskKey(got)), "invalid_api_key"}
	}
	return nil
}

func maskKey(k string) string {
	if len(k) <= 8 {
		return "****"
	}
	return k[:3] + strings.Repeat("*", 8) + k[len(k)-4:]
}

// vendorErr is an error response: status, the vendor's type, message, and for
// OpenAI an optional code.
type vendorErr struct {
	status int
	typ    string
	msg    string
	code   string
}

func (s *Server) defaultError(status int, model string) *vendorErr {
	if s.Kind == Anthropic {
		typ, msg := "api_error", "Internal server error"
		switch status {
		case 400:
			typ, msg = "invalid_request_error", "Invalid request"
		case 401:
			typ, msg = "authentication_error", "invalid x-api-key"
		case 403:
			typ, msg = "permission_error", "Your API key does not have permission to use the specified resource."
		case 404:
			typ, msg = "not_found_error", "model: "+model
		case 413:
			typ, msg = "request_too_large", "Request exceeds the maximum allowed number of bytes."
		case 429:
			typ, msg = "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"
		case 529:
			typ, msg = "overloaded_error", "Overloaded"
		}
		return &vendorErr{status, typ, msg, ""}
	}
	e := &vendorErr{status: status, typ: "server_error", msg: "The server had an error while processing your request. Sorry about that!"}
	switch status {
	case 400:
		e.typ, e.msg = "invalid_request_error", "Invalid request"
	case 401:
		e.typ, e.msg, e.code = "invalid_request_error", "Incorrect API key provided: sk-fake********abcd. You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_api_key"
	case 403:
		e.typ, e.msg, e.code = "invalid_request_error", "Country, region, or territory not supported", "unsupported_country_region_territory"
	case 404:
		e.typ, e.msg, e.code = "invalid_request_error", fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model), "model_not_found"
	case 429:
		e.typ, e.msg, e.code = "requests", fmt.Sprintf("Rate limit reached for %s on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.", model), "rate_limit_exceeded"
	case 503:
		e.typ, e.msg = "server_error", "The engine is currently overloaded, please try again later"
	}
	return e
}

func (s *Server) writeError(w http.ResponseWriter, e *vendorErr, h http.Header) {
	for k, v := range h {
		w.Header()[k] = v
	}
	var body any
	if s.Kind == Anthropic {
		body = map[string]any{"type": "error", "error": map[string]any{"type": e.typ, "message": e.msg}, "request_id": "req_fake"}
	} else {
		var code any
		if e.code != "" {
			code = e.code
		}
		body = map[string]any{"error": map[string]any{"message": e.msg, "type": e.typ, "param": nil, "code": code}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	json.NewEncoder(w).Encode(body)
}

// streamer writes one response's events.
type streamer struct {
	w       http.ResponseWriter
	r       *http.Request
	flusher http.Flusher
	turn    Turn
	rng     *rand.Rand
	events  int
	broken  bool
}

func (st *streamer) flush() {
	if st.flusher != nil {
		st.flusher.Flush()
	}
}

// send writes one event (name "" for a data-only event) and reports whether the
// stream goes on.
func (st *streamer) send(name string, data any) bool {
	if st.broken {
		return false
	}
	if st.events > 0 && st.turn.ChunkDelay > 0 {
		select {
		case <-time.After(st.turn.ChunkDelay):
		case <-st.r.Context().Done():
			st.broken = true
			return false
		}
	}
	if st.turn.BreakAfter > 0 && st.events >= st.turn.BreakAfter {
		st.broken = true
		// Aborting the handler drops the connection without the stream's end.
		panic(http.ErrAbortHandler)
	}
	var b []byte
	switch d := data.(type) {
	case string:
		b = []byte(d)
	default:
		b, _ = json.Marshal(d)
	}
	var out strings.Builder
	if name != "" {
		out.WriteString("event: " + name + "\n")
	}
	out.WriteString("data: ")
	out.Write(b)
	out.WriteString("\n\n")
	if _, err := st.w.Write([]byte(out.String())); err != nil {
		st.broken = true
		return false
	}
	st.events++
	st.flush()
	return true
}

// pieces cuts s into pieces of 3 to 7 bytes, never inside a UTF-8 sequence.
func (st *streamer) pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		n := 3 + st.rng.IntN(5)
		if n >= len(s) {
			out = append(out, s)
			break
		}
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func estimateTokens(n int) int { return max(1, n/4) }

func readBody(r *http.Request) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r.Body, 64<<20))
}
