package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// resolveTimeout bounds one Baidu redirect lookup; a slow one keeps its baidu.com
// link rather than holding up the answer.
const resolveTimeout = 5 * time.Second

// baidu asks www.baidu.com/s?wd=, the page a browser gets, and resolves the
// baidu.com/link?url= redirects the page leaves opaque.
func (s *Searcher) baidu(ctx context.Context, cfg engineConfig, query string, n int) ([]Result, error) {
	u := *cfg.endpoint
	q := u.Query()
	q.Set("wd", query)
	// ie=utf-8: without it Baidu reads the query as GBK.
	q.Set("ie", "utf-8")
	// Ads and cards take places on the page, so ask for more than the results wanted.
	q.Set("rn", strconv.Itoa(max(10, 2*n)))
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", browserUA)
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	req.Header.Set("Accept-Language", "zh-CN,zh;q=0.9,en;q=0.8")
	resp, body, err := s.do(EngineBaidu, req)
	if err != nil {
		return nil, err
	}
	// The captcha arrives as a redirect to wappass.baidu.com/static/captcha/…, which the
	// client has followed by now.
	if final := resp.Request.URL; final.Host == "wappass.baidu.com" || strings.Contains(final.Path, "/static/captcha") {
		return nil, blocked(EngineBaidu, "asked for a security check (百度安全验证, a captcha) instead of answering")
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusFailure(EngineBaidu, resp.StatusCode)
	}
	hits, err := parseBaidu(body)
	switch {
	case errors.Is(err, errChallenge):
		return nil, blocked(EngineBaidu, "asked for a security check (百度安全验证, a captcha) instead of answering")
	case errors.Is(err, errUnknownPage):
		return nil, unknownPage(EngineBaidu)
	case err != nil:
		return nil, err
	}
	if len(hits) > n {
		hits = hits[:n]
	}
	s.resolveBaidu(ctx, cfg.endpoint, hits)
	out := make([]Result, len(hits))
	for i, h := range hits {
		out[i] = h.Result
	}
	return out, nil
}

// baiduHit is a result whose URL may still be a baidu.com/link redirect.
type baiduHit struct {
	Result
	redirect string // the /link?url= URL to resolve, when no real URL was on the page
}

// parseBaidu reads a Baidu result page. Each hit is a div.result / div.c-container in
// #content_left with an h3 a title. Its real URL is, by preference, the container's mu
// attribute, the title link's data-landurl, the url of its data-tools JSON, or the
// title link itself; most are only a baidu.com/link?url= redirect, left for
// resolveBaidu. Ads (EC_ / ec- classes, data-tuiguang, a 广告 label) are skipped.
func parseBaidu(body []byte) ([]baiduHit, error) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	title := doc.Find("title").First().Text()
	root := doc.Find("#content_left")
	if strings.Contains(title, "安全验证") || (root.Length() == 0 &&
		(doc.Find("#captcha, .vcode-body, .passMod_dialog-body").Length() > 0 || strings.Contains(doc.Text(), "安全验证"))) {
		return nil, errChallenge
	}
	if root.Length() == 0 {
		if doc.Find(".nors, #noresult").Length() > 0 {
			return []baiduHit{}, nil
		}
		return nil, errUnknownPage
	}
	const containers = "div.result, div.c-container, div.result-op"
	out := []baiduHit{}
	// Repeats are dropped here, before the caller trims to the number asked for; the
	// link of a redirect-only hit is unique to it, so those are never merged.
	seen := map[string]bool{}
	root.Find(containers).Each(func(_ int, c *goquery.Selection) {
		// Cards nest c-containers in a result; the outer one is the hit.
		if c.ParentsFiltered(containers).Length() > 0 || baiduAd(c) {
			return
		}
		a := c.Find("h3 a").First()
		if a.Length() == 0 {
			return
		}
		h := baiduHit{Result: Result{Title: clean(a.Text())}}
		if h.Title == "" {
			h.Title = clean(dataTools(c, "title"))
		}
		href, _ := a.Attr("href")
		mu, _ := c.Attr("mu")
		land, _ := a.Attr("data-landurl")
		for _, cand := range []string{mu, land, dataTools(c, "url"), href} {
			cand = strings.TrimSpace(cand)
			switch {
			case !httpURL(cand) || strings.Contains(cand, "nourl."):
				// nourl.ubs.baidu.com is the mu of Baidu's own cards: no page to go to.
			case baiduRedirect(cand):
				if h.redirect == "" {
					h.redirect = cand
				}
			default:
				if h.URL == "" {
					h.URL = canonicalURL(cand)
				}
			}
		}
		if h.URL == "" {
			h.URL = h.redirect
		} else {
			h.redirect = ""
		}
		if h.URL == "" || h.Title == "" || seen[h.URL] {
			return
		}
		seen[h.URL] = true
		for _, sel := range baiduSnippet {
			if h.Snippet = clean(c.Find(sel).First().Text()); h.Snippet != "" {
				break
			}
		}
		out = append(out, h)
	})
	return out, nil
}

// baiduSnippet lists where each layout keeps the abstract, most specific first: the
// classic c-abstract, the current content-right_<hash> span (its hash changes with
// Baidu's builds), and the text column of cards.
var baiduSnippet = []string{".c-abstract", "[class*=content-right_]", ".c-span-last .c-color-text", ".c-color-text", ".c-span-last"}

// baiduAd recognises Baidu's promoted results: EC_/ec- classes and data-tuiguang
// ("promotion") attributes in the current and past layouts, and the visible 广告
// ("advertisement") label every ad carries by law.
func baiduAd(c *goquery.Selection) bool {
	if cls, _ := c.Attr("class"); cls != "" {
		for _, f := range strings.Fields(strings.ToLower(cls)) {
			if strings.HasPrefix(f, "ec_") || strings.HasPrefix(f, "ec-") {
				return true
			}
		}
	}
	if _, ok := c.Attr("data-tuiguang"); ok || c.Find("[data-tuiguang]").Length() > 0 {
		return true
	}
	ad := false
	// The label is a leaf element; reading only leaves keeps this linear in the page.
	c.Find("span, a, div").EachWithBreak(func(_ int, e *goquery.Selection) bool {
		if e.Children().Length() > 0 {
			return true
		}
		if t := strings.TrimSpace(e.Text()); t == "广告" || t == "商业推广" {
			ad = true
		}
		return !ad
	})
	return ad
}

// jsField reads a field of data-tools when it is the older JavaScript object literal
// ({title:'…',url:'…'}) rather than JSON.
var jsField = lazyRegexp(`(\w+)\s*:\s*'((?:[^'\\]|\\.)*)'`)

// dataTools reads a field of the container's data-tools attribute (the share/report
// menu's data), written as JSON in current pages and as a JS literal in older ones.
func dataTools(c *goquery.Selection, field string) string {
	raw, ok := c.Attr("data-tools")
	if !ok {
		if raw, ok = c.Find("[data-tools]").First().Attr("data-tools"); !ok {
			return ""
		}
	}
	var m map[string]any
	if json.Unmarshal([]byte(raw), &m) == nil {
		v, _ := m[field].(string)
		return v
	}
	for _, f := range jsField().FindAllStringSubmatch(raw, -1) {
		if f[1] == field {
			return f[2]
		}
	}
	return ""
}

// baiduRedirect reports whether u is Baidu's opaque click-through redirect.
func baiduRedirect(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	host := strings.ToLower(p.Hostname())
	return p.Path == "/link" && p.Query().Get("url") != "" && (host == "baidu.com" || strings.HasSuffix(host, ".baidu.com"))
}

// resolveBaidu replaces redirect links by the URL their Location header names. The
// link is Baidu's own, so asking Baidu where it leads is not fetching the result: the
// request goes to the configured endpoint's origin (which is www.baidu.com in
// production, over https, and loopback in tests) and is not followed. A link that
// does not resolve in time stays as it is.
func (s *Searcher) resolveBaidu(ctx context.Context, endpoint *url.URL, hits []baiduHit) {
	noFollow := *s.client
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	var wg sync.WaitGroup
	for i := range hits {
		if hits[i].redirect == "" {
			continue
		}
		link, err := url.Parse(hits[i].redirect)
		if err != nil {
			continue
		}
		link.Scheme, link.Host = endpoint.Scheme, endpoint.Host
		wg.Add(1)
		go func(h *baiduHit, link string) {
			defer wg.Done()
			if real := resolveOne(ctx, &noFollow, link); real != "" {
				h.URL = real
			}
		}(&hits[i], link.String())
	}
	wg.Wait()
}

// Without a browser's cookies Baidu sometimes answers a link with 200 and a page that
// redirects by script or meta refresh instead of a 302.
var (
	metaRefresh    = lazyRegexp(`(?i)URL\s*=\s*'([^']+)'`)
	scriptLocation = lazyRegexp(`location\.(?:replace|assign)\(\s*"([^"]+)"`)
)

// lazyRegexp compiles expr when first used, not while the host process starts.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

func resolveOne(ctx context.Context, c *http.Client, link string) string {
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return ""
	}
	req.Header.Set("User-Agent", browserUA)
	resp, err := c.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	cand := ""
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		cand = resp.Header.Get("Location")
	} else if resp.StatusCode == http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if m := metaRefresh().FindSubmatch(b); m != nil {
			cand = string(m[1])
		} else if m := scriptLocation().FindSubmatch(b); m != nil {
			cand = string(m[1])
		}
	}
	if !httpURL(cand) || baiduRedirect(cand) {
		return ""
	}
	if u, err := url.Parse(cand); err != nil || u.Host == "wappass.baidu.com" {
		return ""
	}
	return canonicalURL(cand)
}
