// Package search is the host's web_search builtin tool: one query against the engine
// the user chose (DuckDuckGo, Bing, Baidu or Google Custom Search), answered as
// [{title, url, snippet}] with the engines' redirect links already resolved to the
// pages they lead to.
//
// Keyless engines are scraped from their HTML result pages, so their markup is the
// contract here; testdata holds pages in each engine's real format, and every
// endpoint is a setting so that tests serve them from loopback.
package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/tools"
)

// Secrets reads stored secrets; *storage.DB satisfies it.
type Secrets interface {
	Secret(ctx context.Context, key string) ([]byte, bool, error)
}

// Deps is what the tool needs from the host. A nil Settings means every setting has
// its default; a nil Secrets means no key is set; a nil Client means a client of the
// tool's own with a 30 s timeout.
type Deps struct {
	Settings config.Settings
	Secrets  Secrets
	Client   *http.Client
}

// Result is one search hit.
type Result struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet"`
}

const (
	DefaultMaxResults = 5
	MaxResults        = 10

	// maxBody bounds what is read of an engine's answer: a result page is a few
	// hundred KiB; anything far larger is not a result page.
	maxBody = 8 << 20
)

// The HTML engines answer a bare Go client with a block page far sooner than a
// browser, so the keyless engines are asked with a browser's headers.
const browserUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36"

const toolSchema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1},
    "max_results": {"type": "integer", "minimum": 1, "default": 5, "description": "more than 10 gives 10"}
  },
  "required": ["query"],
  "additionalProperties": false
}`

// Searcher runs searches with the configured engine. Settings and secrets are read on
// every search, so `ferry config set` and `ferry secret set` apply without a restart.
type Searcher struct {
	settings config.Settings
	secrets  Secrets
	client   *http.Client
}

// New builds a Searcher.
func New(deps Deps) *Searcher {
	c := deps.Client
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	return &Searcher{settings: deps.Settings, secrets: deps.Secrets, client: c}
}

// Tools returns the web_search builtin tool.
func Tools(deps Deps) []tools.Tool {
	s := New(deps)
	return []tools.Tool{{
		Name:        "web_search",
		Description: "Search the web: the top results as [{title, url, snippet}]. web_fetch reads a result's page.",
		Parameters:  json.RawMessage(toolSchema),
		Source:      tools.SourceBuiltin,
		Kind:        tools.KindRead,
		// The query goes to the engine the person chose; the results are anyone's
		// words, public.
		Class: tools.ClassWayOut,
		Effects: func(ctx context.Context, call *tools.Call) (tools.Effect, error) {
			var a struct {
				Query string `json:"query"`
			}
			if err := call.Decode(&a); err != nil {
				return tools.Effect{}, err
			}
			return tools.Effect{Sends: []tools.Send{{To: tools.DestSearch, Carries: []string{a.Query}}}}, nil
		},
		Provenance: func(call *tools.Call, e tools.Effect, res *tools.Result) tools.Provenance {
			if !res.Success {
				return tools.Provenance{}
			}
			b, _ := json.Marshal(res.Result)
			return tools.Provenance{Reads: []tools.Read{{Source: tools.SourceSearch, Untrusted: true, Content: string(b)}}}
		},
		// The engine's own request may take the client's whole 30 s; Baidu's redirect
		// links are resolved after it, hence the margin.
		Timeout: 45 * time.Second,
		Available: func(ctx context.Context, _ *tools.Call) (bool, string) {
			if _, err := s.load(ctx); err != nil {
				var f *tools.Failure
				if errors.As(err, &f) {
					return false, f.Reason
				}
				// A storage error is not a reason to hide the tool; Run reports it.
			}
			return true, ""
		},
		Run: s.run,
	}}
}

func (s *Searcher) run(ctx context.Context, call *tools.Call) (any, error) {
	var args struct {
		Query      string `json:"query"`
		MaxResults *int   `json:"max_results"`
	}
	if err := call.Decode(&args); err != nil {
		return nil, tools.Failf(tools.CodeInvalidParams, "arguments: %v", err)
	}
	n := DefaultMaxResults
	if args.MaxResults != nil {
		n = *args.MaxResults
	}
	return s.Search(ctx, args.Query, n)
}

// Search asks the configured engine. maxResults outside 1–10 is brought into range (0
// means the default). Errors are *tools.Failure values whose reason names the engine
// and what to do about it. No results is an empty, non-nil slice.
func (s *Searcher) Search(ctx context.Context, query string, maxResults int) ([]Result, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return nil, tools.Failf(tools.CodeInvalidParams, "query is blank")
	}
	switch {
	case maxResults == 0:
		maxResults = DefaultMaxResults
	case maxResults < 1:
		maxResults = 1
	case maxResults > MaxResults:
		maxResults = MaxResults
	}
	cfg, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	var out []Result
	switch cfg.engine {
	case EngineDuckDuckGo:
		out, err = s.duckduckgo(ctx, cfg, query)
	case EngineBing:
		out, err = s.bing(ctx, cfg, query, maxResults)
	case EngineBaidu:
		out, err = s.baidu(ctx, cfg, query, maxResults)
	case EngineGoogle:
		out, err = s.google(ctx, cfg, query, maxResults)
	}
	if err != nil {
		return nil, err
	}
	out = dedupe(out)
	if len(out) > maxResults {
		out = out[:maxResults]
	}
	if out == nil {
		out = []Result{}
	}
	return out, nil
}

type engineConfig struct {
	engine   string
	endpoint *url.URL
	key      string // bing, google
	cx       string // google
}

// load reads the engine's configuration; a missing key or engine id is an
// ACTION_UNAVAILABLE failure naming the command that sets it.
func (s *Searcher) load(ctx context.Context) (engineConfig, error) {
	snap := config.Of(nil)
	if s.settings != nil {
		snap = s.settings.Snapshot(ctx)
	}
	if snap.Err != nil {
		return engineConfig{}, fmt.Errorf("reading settings: %w", snap.Err)
	}
	// Both pass their checks (a stored value that does not reads as the default).
	cfg := engineConfig{engine: snap.String(SettingEngine)}
	cfg.endpoint, _ = url.Parse(snap.String(EndpointSetting(cfg.engine)))
	var err error

	switch cfg.engine {
	case EngineBing:
		if cfg.key, err = s.secret(ctx, SecretBingKey); err != nil {
			return cfg, err
		}
		if cfg.key == "" {
			return cfg, tools.Failf(tools.CodeActionUnavailable,
				"the Bing engine needs a Bing Web Search API key: store it with `ferry secret set %s` (the key is read from stdin), "+
					"or switch to a keyless engine with `ferry config set search.engine duckduckgo`", SecretBingKey)
		}
	case EngineGoogle:
		if cfg.key, err = s.secret(ctx, SecretGoogleKey); err != nil {
			return cfg, err
		}
		if cfg.key == "" {
			return cfg, tools.Failf(tools.CodeActionUnavailable,
				"the Google engine needs a Custom Search JSON API key: store it with `ferry secret set %s` (the key is read from stdin), "+
					"or switch to a keyless engine with `ferry config set search.engine duckduckgo`", SecretGoogleKey)
		}
		if cfg.cx = strings.TrimSpace(snap.String(SettingGoogleCX)); cfg.cx == "" {
			return cfg, tools.Failf(tools.CodeActionUnavailable,
				"the Google engine needs a Programmable Search Engine ID: set it with `ferry config set %s YOUR_ENGINE_ID`, "+
					"or switch to a keyless engine with `ferry config set search.engine duckduckgo`", SettingGoogleCX)
		}
	}
	return cfg, nil
}

func (s *Searcher) secret(ctx context.Context, key string) (string, error) {
	if s.secrets == nil {
		return "", nil
	}
	v, ok, err := s.secrets.Secret(ctx, key)
	if err != nil {
		return "", fmt.Errorf("reading secret %s: %w", key, err)
	}
	if !ok {
		return "", nil
	}
	// `ferry secret set` keeps inner spaces on purpose; a key never has them at its ends.
	return strings.TrimSpace(string(v)), nil
}

// do sends req and reads the answer's body (bounded). Transport failures become
// failures naming the engine.
func (s *Searcher) do(engine string, req *http.Request) (*http.Response, []byte, error) {
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, nil, transportFailure(req.Context(), engine, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return resp, nil, transportFailure(req.Context(), engine, err)
	}
	return resp, body, nil
}

func transportFailure(ctx context.Context, engine string, err error) error {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded || (errors.As(err, &ne) && ne.Timeout()) {
		return tools.Failf(tools.CodeTimeout, "%s did not answer in time; try again, or switch engine with `ferry config set search.engine %s`",
			labels[engine], alternative(engine))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// The error names the URL, and an API key may travel in its query (Google's
	// key=): the failure goes to the model, the audit log and the log file.
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.RawQuery != "" {
			u.RawQuery = ""
			ue.URL = u.String() + "?…"
		}
	}
	return tools.Failf(tools.CodeHandlerError, "%s could not be reached: %v", labels[engine], err)
}

// blocked is the failure for a captcha, a bot check or a rate limit: the engine is
// refusing this machine for a while, which waiting or another engine fixes.
func blocked(engine, what string) *tools.Failure {
	return tools.Failf(tools.CodeRateLimited,
		"%s %s. Wait a few minutes before searching again, or switch engine with `ferry config set search.engine %s`",
		labels[engine], what, alternative(engine))
}

// alternative names the engine to suggest instead of engine: a keyless one, since
// that works at once.
func alternative(engine string) string {
	if engine == EngineDuckDuckGo {
		return EngineBaidu
	}
	return EngineDuckDuckGo
}

// statusFailure turns an HTTP error status of an HTML engine into a failure.
func statusFailure(engine string, status int) error {
	switch status {
	case http.StatusTooManyRequests:
		return blocked(engine, "is rate-limiting this machine (HTTP 429)")
	case http.StatusForbidden:
		return blocked(engine, "refused the search (HTTP 403), which usually means it has blocked this machine as a bot")
	}
	return tools.Failf(tools.CodeHandlerError, "%s answered HTTP %d %s", labels[engine], status, http.StatusText(status))
}

// Bing's API marks hit words with U+E000/U+E001 when text decorations are on; Google
// and the HTML pages use <b>. Neither belongs in text handed to a model.
var markers = strings.NewReplacer("\ue000", "", "\ue001", "", "<b>", "", "</b>", "", "<em>", "", "</em>", "", "<strong>", "", "</strong>", "")

// clean collapses whitespace (including no-break and ideographic spaces) and strips
// hit markers from text already free of HTML entities.
func clean(s string) string {
	return strings.Join(strings.Fields(markers.Replace(s)), " ")
}

// cleanAPI is clean for the JSON APIs, whose strings may still carry HTML entities.
func cleanAPI(s string) string { return clean(html.UnescapeString(markers.Replace(s))) }

// dedupe drops repeated URLs: Baidu and DuckDuckGo list one page twice at times (a
// card and an organic hit), and a repeat spends one of the few results asked for.
func dedupe(in []Result) []Result {
	seen := make(map[string]bool, len(in))
	out := in[:0]
	for _, r := range in {
		if r.URL == "" || r.Title == "" || seen[r.URL] {
			continue
		}
		seen[r.URL] = true
		out = append(out, r)
	}
	return out
}

// httpURL reports whether s is an absolute http(s) URL, the only kind worth returning.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// canonicalURL returns s re-encoded the way Go (and the other engines' APIs) write
// URLs, percent-encoding what a redirect parameter carried decoded, or "" when s is
// not an absolute http(s) URL.
func canonicalURL(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.String()
}
