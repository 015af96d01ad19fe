// Package web holds the host's builtin web_fetch tool: an HTTP(S) fetch behind an SSRF
// guard, with HTML reduced to the page's article as Markdown (go-readability; the whole
// page's text when it holds no article), JSON pretty-printed,
// plain text as is, and an optional summary through the configured model.
//
// Choices a caller can rely on:
//   - content is always a string. JSON is validated and returned pretty-printed with
//     two-space indentation, keys in the server's order; a body that claims to be JSON
//     but does not parse is returned as the text it is.
//   - A body over fetch.max_body_bytes is not an error: the first fetch.max_body_bytes
//     bytes are used and truncated is true, as a reader would rather see the start of a
//     long page than nothing.
//   - max_length counts characters (Unicode code points), never splits one, and applies
//     to the content returned (the summary when prompt is given). Without max_length,
//     fetch.max_length applies (0: no limit).
//   - The HTTP client never uses a proxy from the environment: a proxy would make the
//     connection on our behalf, out of reach of the address check.
//   - HTTP statuses of 400 and above are failures naming the status.
package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/markdown"
	"github.com/ferryhq/ferry/host/origins"
	"github.com/ferryhq/ferry/host/tools"
)

// Settings keys this package registers.
const (
	SettingAllowPrivateHosts = "fetch.allow_private_hosts"
	SettingMaxBodyBytes      = "fetch.max_body_bytes"
	SettingMaxLength         = "fetch.max_length"
	SettingTimeoutSeconds    = "fetch.timeout_seconds"
)

const (
	defaultMaxBodyBytes = 10 << 20
	defaultMaxLength    = 100000
	fetchTimeout        = 30 * time.Second // the default of SettingTimeoutSeconds
	// The pipeline's timeout must cover the fetch and a model call for prompt.
	toolTimeout  = 3 * time.Minute
	maxRedirects = 10
)

func init() {
	config.Register(config.Setting{
		Key:         SettingAllowPrivateHosts,
		Description: "host names (exact, or *.suffix), IP addresses and CIDRs, each with an optional :port, that web_fetch may reach although they are loopback, private, link-local or metadata addresses (comma-separated, e.g. intranet.example:8080, 127.0.0.1, [::1]:3000, 10.0.0.0/8); a redirect reaches them only from a fetch that started at a private host",
		Default:     "",
		Validate: func(v string) error {
			_, err := ParseAllowList(v)
			return err
		},
	})
	config.Register(config.Setting{
		Key:         SettingMaxBodyBytes,
		Description: "bytes of a response body web_fetch reads; the rest is dropped and the result marked truncated",
		Default:     strconv.Itoa(defaultMaxBodyBytes),
		Validate:    config.IntRange(1024, 1<<30),
	})
	config.Register(config.Setting{
		Key:         SettingMaxLength,
		Description: "characters of content web_fetch returns when a call gives no max_length (0: no limit)",
		Default:     strconv.Itoa(defaultMaxLength),
		Validate:    config.IntRange(0, 1<<30),
	})
	config.Register(config.Setting{
		Key:         SettingTimeoutSeconds,
		Description: "seconds web_fetch waits for a whole response, redirects included",
		Default:     strconv.Itoa(int(fetchTimeout / time.Second)),
		Validate:    config.IntRange(1, 120),
	})
}

// Summarizer distils fetched content through the configured model.
type Summarizer interface {
	Summarize(ctx context.Context, prompt, content string) (string, error)
}

// ErrNoModel is what a Summarizer returns when no model provider is configured at the
// time of the call; web_fetch turns it into the same clear failure as a nil Summarizer.
var ErrNoModel = errors.New("no model provider is configured")

// Deps is what the web tools need from the host.
type Deps struct {
	Settings   config.Settings // nil: every setting at its default
	Summarizer Summarizer      // nil: no model configured; a call with prompt fails clearly

	// Test hooks, unexported so production code always gets the real resolver, the
	// real address classes and the 30 s timeout.
	resolver hostResolver
	reason   func(netip.Addr) string
	timeout  time.Duration
}

// Result is web_fetch's result.
type Result struct {
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
	Content     string `json:"content"`
	Truncated   bool   `json:"truncated"`
	FinalURL    string `json:"final_url"`
	Status      int    `json:"status"`
	Title       string `json:"title,omitempty"`
	Byline      string `json:"byline,omitempty"`
	Published   string `json:"published,omitempty"`
	Summarized  bool   `json:"summarized,omitempty"`
	// page is what the server sent, as converted: a summary is a model's words, so
	// only the page's own text counts as content seen.
	page string
}

// Tools returns the web tools the host offers.
func Tools(deps Deps) []tools.Tool {
	return []tools.Tool{{
		Name: "web_fetch",
		Description: "Fetch an http(s) URL: an HTML page's article as Markdown (navigation, sidebars, comments and ads removed; " +
			"the whole text when it holds no article), JSON pretty-printed, plain text as is.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "format": "uri"},
    "prompt": {"type": "string"},
    "max_length": {"type": "integer", "minimum": 1}
  },
  "required": ["url"],
  "additionalProperties": false
}`),
		Source:  tools.SourceBuiltin,
		Kind:    tools.KindRead,
		Timeout: toolTimeout,
		Class:   tools.ClassWayOut,
		// The URL is the destination, and so is every redirect's next hop (the rule
		// is asked again at each, in client).
		Effects: func(ctx context.Context, call *tools.Call) (tools.Effect, error) {
			var a struct {
				URL string `json:"url"`
			}
			if err := call.Decode(&a); err != nil {
				return tools.Effect{}, err
			}
			return tools.Effect{Sends: []tools.Send{{URL: a.URL}}}, nil
		},
		Provenance: func(call *tools.Call, e tools.Effect, res *tools.Result) tools.Provenance {
			r, ok := res.Result.(*Result)
			if !res.Success || !ok {
				return tools.Provenance{}
			}
			u := r.FinalURL
			if u == "" {
				u = r.URL
			}
			return tools.Provenance{Reads: []tools.Read{{URL: u, Private: origins.Private(u), Untrusted: true, Content: r.page + "\n" + r.Title, Base: u}}}
		},
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			var args struct {
				URL       string `json:"url"`
				Prompt    string `json:"prompt"`
				MaxLength *int   `json:"max_length"`
			}
			if err := call.Decode(&args); err != nil {
				return nil, tools.Failf(tools.CodeInvalidParams, "web_fetch arguments: %v", err)
			}
			ctx = context.WithValue(ctx, hopKey{}, func(ctx context.Context, next string) error {
				return tools.CheckSend(ctx, call, tools.Send{URL: next})
			})
			return deps.fetch(ctx, args.URL, args.Prompt, args.MaxLength)
		},
	}}
}

func (d Deps) settings(ctx context.Context) *config.Snapshot {
	if d.Settings == nil {
		return config.Of(nil)
	}
	return d.Settings.Snapshot(ctx)
}

// allowListOf is fetch.allow_private_hosts; a stored value that no longer parses
// reads as the default, which allows no private address.
func allowListOf(s *config.Snapshot) *AllowList {
	al, err := ParseAllowList(s.String(SettingAllowPrivateHosts))
	if err != nil {
		al, _ = ParseAllowList("")
	}
	return al
}

// NewClient returns an HTTP client behind the same SSRF guard as web_fetch (allow list
// from fetch.allow_private_hosts, no environment proxy, at most 10 redirects each
// re-checked), for other host code that fetches URLs it did not choose.
func NewClient(ctx context.Context, s config.Settings, timeout time.Duration) *http.Client {
	d := Deps{Settings: s}
	return d.client(allowListOf(d.settings(ctx)), timeout)
}

func (d Deps) client(al *AllowList, timeout time.Duration) *http.Client {
	var r hostResolver = net.DefaultResolver
	if d.resolver != nil {
		r = d.resolver
	}
	reason := d.reason
	if reason == nil {
		reason = BlockedReason
	}
	transport := func(publicChain bool) *http.Transport {
		return &http.Transport{
			Proxy:                  nil,
			DialContext:            newGuardedDialer(r, reason, al, publicChain).DialContext,
			ForceAttemptHTTP2:      true, // a custom DialContext turns HTTP/2 off otherwise
			TLSHandshakeTimeout:    10 * time.Second,
			MaxResponseHeaderBytes: 1 << 20,
			IdleConnTimeout:        30 * time.Second,
		}
	}
	return &http.Client{
		Transport: &chainTransport{open: transport(false), strict: transport(true), reason: reason},
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			// via holds every request so far, so redirect number n sees len(via) == n.
			if len(via) > maxRedirects {
				return tools.Failf(tools.CodeHandlerError, "too many redirects: stopped after %d (last redirect pointed to %s)", maxRedirects, req.URL.Redacted())
			}
			if err := checkURL(req.URL); err != nil {
				return tools.Failf(tools.CodeHandlerError, "redirected from %s to a URL that cannot be fetched: %v", via[len(via)-1].URL.Redacted(), err)
			}
			// A redirect to another origin is a way out of its own: the run's rule
			// judges it as if the model had asked for that URL.
			if hop, ok := req.Context().Value(hopKey{}).(func(context.Context, string) error); ok && !sameOrigin(req.URL, via[len(via)-1].URL) {
				if err := hop(req.Context(), req.URL.String()); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// checkURL refuses what web_fetch never fetches, whatever the address.
// hopKey carries a fetch's check of each redirect's next hop (the run's data-flow
// rule), set by the tool for the call it runs.
type hopKey struct{}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

func checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		if u.Scheme == "" {
			return fmt.Errorf("%q has no scheme; only http:// and https:// URLs can be fetched", u.Redacted())
		}
		return fmt.Errorf("scheme %q is not supported; only http and https URLs can be fetched", u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("URLs with credentials (user:password@host) are refused: a password must not travel in a URL the model wrote")
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%q has no host", u.Redacted())
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q is out of range (1-65535)", p)
		}
	}
	return nil
}

func (d Deps) fetch(ctx context.Context, rawURL, prompt string, maxLength *int) (*Result, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return nil, tools.Failf(tools.CodeInvalidParams, "url: %v", err)
	}
	if err := checkURL(u); err != nil {
		return nil, tools.Failf(tools.CodeInvalidParams, "url: %v", err)
	}
	if maxLength != nil && *maxLength < 1 {
		return nil, tools.Failf(tools.CodeInvalidParams, "max_length must be at least 1")
	}
	if prompt != "" && d.Summarizer == nil {
		return nil, noModel()
	}
	s := d.settings(ctx)
	al := allowListOf(s)
	maxBody := s.Int(SettingMaxBodyBytes)
	defLimit := s.Int(SettingMaxLength)
	limit := defLimit
	if maxLength != nil {
		limit = *maxLength
	}
	timeout := s.Seconds(SettingTimeoutSeconds)
	if d.timeout > 0 {
		timeout = d.timeout
	}
	page, err := d.get(ctx, d.client(al, timeout), u, maxBody, timeout)
	if err != nil {
		return nil, err
	}
	res := &Result{
		URL:         rawURL,
		ContentType: page.mediaType,
		FinalURL:    page.finalURL,
		Status:      page.status,
		Truncated:   page.truncated,
	}
	switch page.kind {
	case kindHTML:
		base, _ := url.Parse(page.finalURL)
		doc := markdown.Extract(page.text, base)
		res.Title, res.Byline, res.Published, res.Content = doc.Title, doc.Byline, doc.Published, doc.Markdown
	case kindJSON:
		res.Content = prettyJSON(page.text)
	default:
		res.Content = page.text
	}
	res.page = res.Content

	if prompt != "" {
		in, cut := markdown.TruncateRunes(res.Content, defLimit)
		sum, err := d.Summarizer.Summarize(ctx, prompt, in)
		if errors.Is(err, ErrNoModel) {
			return nil, noModel()
		}
		if err != nil {
			return nil, tools.Failf(tools.CodeHandlerError, "summarising %s through the model: %v", page.finalURL, err)
		}
		res.Content, res.Summarized = sum, true
		res.Truncated = res.Truncated || cut
	}
	var cut bool
	res.Content, cut = markdown.TruncateRunes(res.Content, limit)
	res.Truncated = res.Truncated || cut
	return res, nil
}

func noModel() error {
	return tools.Failf(tools.CodeActionUnavailable,
		"prompt needs a model to summarise with, and no model provider is configured; add one with `ferry provider add ID --kind openai|anthropic --base-url URL --model NAME --api-key-stdin --default`, or call web_fetch without prompt")
}

func prettyJSON(s string) string {
	var b bytes.Buffer
	b.Grow(len(s) + len(s)/4)
	if err := json.Indent(&b, []byte(strings.TrimPrefix(s, "\ufeff")), "", "  "); err != nil {
		return s
	}
	return b.String()
}
