package search

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"

	"github.com/ferryhq/ferry/host/tools"
)

// duckduckgo asks DuckDuckGo's HTML endpoint, the one meant for browsers without
// JavaScript: it needs no key and answers one page of about ten results.
func (s *Searcher) duckduckgo(ctx context.Context, cfg engineConfig, query string) ([]Result, error) {
	// A form POST, as the endpoint's own search box sends it: DuckDuckGo challenges
	// bare GETs from non-browsers sooner.
	form := url.Values{"q": {query}, "b": {""}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.endpoint.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", browserUA)
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	req.Header.Set("Referer", cfg.endpoint.Scheme+"://"+cfg.endpoint.Host+"/")
	resp, body, err := s.do(EngineDuckDuckGo, req)
	if err != nil {
		return nil, err
	}
	// DuckDuckGo answers its bot check with 202 Accepted rather than an error status.
	if resp.StatusCode == http.StatusAccepted {
		return nil, blocked(EngineDuckDuckGo, "asked for a bot check (a challenge page with HTTP 202) instead of answering")
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusFailure(EngineDuckDuckGo, resp.StatusCode)
	}
	out, err := parseDuckDuckGo(body)
	switch {
	case errors.Is(err, errChallenge):
		return nil, blocked(EngineDuckDuckGo, "asked for a bot check (\"Unfortunately, bots use DuckDuckGo too\") instead of answering")
	case errors.Is(err, errUnknownPage):
		return nil, unknownPage(EngineDuckDuckGo)
	}
	return out, err
}

var (
	errChallenge   = errors.New("challenge page")
	errUnknownPage = errors.New("not a result page")
)

// unknownPage is a page with neither results nor a "no results" notice: a changed
// layout or a block page not yet known. Saying so beats answering [] as if the web
// had nothing on the query.
func unknownPage(engine string) error {
	return tools.Failf(tools.CodeHandlerError,
		"%s returned a page that is neither a result list nor a \"no results\" page (its layout may have changed, or it is a block page); "+
			"try again later, or switch engine with `ferry config set search.engine %s`", labels[engine], alternative(engine))
}

// parseDuckDuckGo reads a page of html.duckduckgo.com/html. Results are
// div.result blocks holding a.result__a (title, usually a /l/?uddg= redirect) and
// .result__snippet; ads are the same blocks marked result--ad.
func parseDuckDuckGo(body []byte) ([]Result, error) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if doc.Find("#challenge-form, .anomaly-modal__modal, .anomaly-modal__title").Length() > 0 ||
		strings.Contains(doc.Text(), "bots use DuckDuckGo too") {
		return nil, errChallenge
	}
	out := []Result{}
	doc.Find("div.result").Each(func(_ int, r *goquery.Selection) {
		if r.HasClass("result--ad") || r.HasClass("result--no-result") {
			return
		}
		a := r.Find("a.result__a").First()
		href, _ := a.Attr("href")
		u := duckduckgoURL(href)
		if u == "" {
			return
		}
		out = append(out, Result{
			Title:   clean(a.Text()),
			URL:     u,
			Snippet: clean(r.Find(".result__snippet").First().Text()),
		})
	})
	if len(out) == 0 && doc.Find(".no-results, #links, .serp__results").Length() == 0 {
		return nil, errUnknownPage
	}
	return out, nil
}

// duckduckgoURL turns a result link into the page it leads to: DuckDuckGo's
// //duckduckgo.com/l/?uddg=URL&rut=… redirect carries the target in uddg, so it is
// read rather than followed. Ad links (/y.js) give "".
func duckduckgoURL(href string) string {
	u, err := url.Parse(strings.TrimSpace(href))
	if err != nil {
		return ""
	}
	if u.Path == "/y.js" || u.Query().Get("ad_domain") != "" {
		return ""
	}
	if strings.HasSuffix(u.Path, "/l/") || u.Path == "/l" {
		return canonicalURL(u.Query().Get("uddg"))
	}
	if u.Scheme == "" && u.Host != "" {
		u.Scheme = "https"
	}
	if s := u.String(); httpURL(s) {
		return s
	}
	return ""
}
