package web

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/host/markdown"
	"github.com/ferryhq/ferry/host/tools"
)

type bodyKind int

const (
	kindUnknown bodyKind = iota
	kindHTML
	kindJSON
	kindText
	kindUnsupported
)

// classify maps a media type to how web_fetch treats it. Text-like types beyond
// text/plain (CSS, CSV, XML feeds, scripts) are returned as text since a reader can
// use them; anything else (images, PDFs, archives, octet-stream) is refused.
func classify(mediaType string) bodyKind {
	switch {
	case mediaType == "":
		return kindUnknown
	case mediaType == "text/html", mediaType == "application/xhtml+xml":
		return kindHTML
	case mediaType == "application/json", mediaType == "text/json",
		strings.HasSuffix(mediaType, "+json"):
		return kindJSON
	case strings.HasPrefix(mediaType, "text/"),
		mediaType == "application/xml", strings.HasSuffix(mediaType, "+xml"),
		mediaType == "application/javascript", mediaType == "application/x-javascript",
		mediaType == "application/ecmascript", mediaType == "application/x-ndjson",
		mediaType == "application/x-yaml", mediaType == "application/yaml",
		mediaType == "application/toml":
		return kindText
	}
	return kindUnsupported
}

type page struct {
	finalURL  string
	status    int
	mediaType string
	kind      bodyKind
	text      string // decoded to valid UTF-8
	truncated bool
}

var userAgent = "Mozilla/5.0 (compatible; Ferry/" + buildinfo.Version + "; AI browser agent; +https://github.com/ferryhq/ferry)"

func (d Deps) get(ctx context.Context, c *http.Client, u *url.URL, maxBody int, timeout time.Duration) (*page, error) {
	defer c.CloseIdleConnections()
	// The client's own Timeout covers headers and body; a context deadline is added so
	// that dials and DNS stop at the same moment.
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, tools.Failf(tools.CodeInvalidParams, "url: %v", err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/json;q=0.9,text/plain;q=0.8,*/*;q=0.5")

	resp, err := c.Do(req)
	if err != nil {
		return nil, fetchError(ctx, u, err, timeout)
	}
	defer resp.Body.Close()

	p := &page{finalURL: resp.Request.URL.String(), status: resp.StatusCode}
	ct := resp.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		p.mediaType = strings.ToLower(mt)
	}
	p.kind = classify(p.mediaType)
	if p.kind == kindUnsupported {
		if resp.StatusCode >= 400 {
			return nil, tools.Failf(tools.CodeHandlerError, "%s answered HTTP %s", p.finalURL, resp.Status)
		}
		return nil, unsupported(p)
	}

	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxBody)+1))
	if err != nil {
		return nil, fetchError(ctx, u, err, timeout)
	}
	if len(body) > maxBody {
		body, p.truncated = body[:maxBody], true
	}
	if p.kind == kindUnknown {
		mt, _, _ := mime.ParseMediaType(http.DetectContentType(body))
		p.mediaType = mt
		if p.kind = classify(mt); p.kind == kindUnsupported {
			return nil, unsupported(p)
		}
	}

	p.text = decode(body, ct, p.kind, p.truncated)
	if resp.StatusCode >= 400 {
		snippet := p.text
		if p.kind == kindHTML {
			snippet = markdown.Extract(p.text, resp.Request.URL).Markdown
		}
		snippet, _ = markdown.TruncateRunes(strings.Join(strings.Fields(snippet), " "), 300)
		return nil, tools.Failf(tools.CodeHandlerError, "%s answered HTTP %s; the page says: %q", p.finalURL, resp.Status, snippet)
	}
	return p, nil
}

func unsupported(p *page) error {
	return tools.Failf(tools.CodeHandlerError,
		"%s is %s, which web_fetch cannot read: it returns HTML, JSON and text only (not images, PDFs or other binary files)",
		p.finalURL, p.mediaType)
}

func fetchError(parent context.Context, u *url.URL, err error, timeout time.Duration) error {
	var f *tools.Failure
	if errors.As(err, &f) {
		return f
	}
	var be *BlockedError
	if errors.As(err, &be) {
		return &tools.Failure{Code: tools.CodePermissionDenied, Reason: be.Error()}
	}
	if parent.Err() != nil {
		return parent.Err()
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return tools.Failf(tools.CodeTimeout, "no complete answer from %s within %s", u.Host, timeout)
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return tools.Failf(tools.CodeHandlerError, "could not resolve host %q: %v", dns.Name, dns.Err)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return tools.Failf(tools.CodeHandlerError, "fetching %s: %v", u.Redacted(), err)
}

// decode turns the body into valid UTF-8. Order: byte order mark, the Content-Type
// charset, (HTML) a <meta> declaration, then UTF-8 if the bytes are valid UTF-8, else
// windows-1252 as browsers do. A header that claims a Latin-1 family charset for bytes
// that are valid non-ASCII UTF-8 is a common server default, not a real declaration,
// so UTF-8 wins there.
func decode(body []byte, contentType string, kind bodyKind, truncated bool) string {
	if truncated {
		// A cut through a multi-byte character must not turn a UTF-8 page into
		// "invalid, so windows-1252".
		body = trimPartialRune(body)
	}
	if e, _, certain := charset.DetermineEncoding(body, ""); certain {
		return decodeWith(e, body) // BOM
	}
	enc, name := lookupLabel(contentTypeCharset(contentType))
	if enc == nil && kind == kindHTML {
		enc, name = metaCharset(body)
	}
	if enc != nil {
		if isLatin1Family(name) && hasHighBit(body) && utf8.Valid(body) {
			return string(body)
		}
		return decodeWith(enc, body)
	}
	if utf8.Valid(body) {
		return string(body)
	}
	if kind == kindJSON {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	e, _ := charset.Lookup("windows-1252")
	return decodeWith(e, body)
}

func decodeWith(e encoding.Encoding, body []byte) string {
	out, err := e.NewDecoder().Bytes(body)
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	if !utf8.Valid(out) {
		return strings.ToValidUTF8(string(out), "\uFFFD")
	}
	return string(out)
}

func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

func contentTypeCharset(ct string) string {
	if _, params, err := mime.ParseMediaType(ct); err == nil {
		return params["charset"]
	}
	return ""
}

func lookupLabel(label string) (encoding.Encoding, string) {
	if label == "" {
		return nil, ""
	}
	e, name := charset.Lookup(strings.Trim(label, `"' `))
	if e == nil {
		return nil, ""
	}
	// The HTML standard treats a declared UTF-16 in a byte-oriented context as UTF-8.
	if strings.HasPrefix(name, "utf-16") {
		return encoding.Nop, "utf-8"
	}
	return e, name
}

func isLatin1Family(name string) bool {
	return name == "windows-1252" || name == "iso-8859-1" || name == "us-ascii"
}

func hasHighBit(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// metaCharset looks for <meta charset> or <meta http-equiv=content-type> in the
// document's head. Real pages put these past the first 1024 bytes the HTML standard's
// prescan reads (long <script> blocks in <head>), so the whole head, up to 64 KiB, is
// tokenized.
func metaCharset(body []byte) (encoding.Encoding, string) {
	if len(body) > 64<<10 {
		body = body[:64<<10]
	}
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return nil, ""
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch string(name) {
			case "body":
				return nil, ""
			case "meta":
				var cs, equiv, content string
				for hasAttr {
					var k, v []byte
					k, v, hasAttr = z.TagAttr()
					switch string(k) {
					case "charset":
						cs = string(v)
					case "http-equiv":
						equiv = strings.ToLower(string(v))
					case "content":
						content = string(v)
					}
				}
				if cs == "" && equiv == "content-type" {
					cs = charsetFromContent(content)
				}
				if e, name := lookupLabel(cs); e != nil {
					return e, name
				}
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == "head" {
				return nil, ""
			}
		}
	}
}

// charsetFromContent reads "text/html; charset=gbk" leniently: pages write it with
// quotes, without spaces or with a trailing semicolon, which mime.ParseMediaType
// partly refuses.
func charsetFromContent(s string) string {
	i := strings.Index(strings.ToLower(s), "charset")
	if i < 0 {
		return ""
	}
	s = strings.TrimLeft(s[i+len("charset"):], " \t")
	s, ok := strings.CutPrefix(s, "=")
	if !ok {
		return ""
	}
	s = strings.Trim(strings.TrimSpace(s), `"'`)
	if j := strings.IndexAny(s, `;"' `); j >= 0 {
		s = s[:j]
	}
	return s
}
