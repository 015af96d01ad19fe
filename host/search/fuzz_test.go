package search

import (
	"strings"
	"testing"
)

// The HTML parsers read pages an outside party writes; whatever arrives, they must
// return results or an error, never panic, and never return a result without a title
// or an http(s) URL.

func FuzzParseDuckDuckGo(f *testing.F) {
	for _, name := range []string{"duckduckgo/results.html", "duckduckgo/noresults.html", "duckduckgo/anomaly.html"} {
		f.Add(fixture(f, name))
	}
	f.Add([]byte(`<div class="result"><a class="result__a" href="//duckduckgo.com/l/?uddg=%">x</a></div>`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, page []byte) {
		rs, err := parseDuckDuckGo(page)
		if err != nil {
			return
		}
		for _, r := range rs {
			if r.Title == "" && r.URL == "" {
				continue // dropped later by dedupe
			}
			if !httpURL(r.URL) {
				t.Fatalf("result with URL %q", r.URL)
			}
		}
	})
}

func FuzzParseBaidu(f *testing.F) {
	for _, name := range []string{"baidu/results.html", "baidu/noresults.html", "baidu/captcha.html"} {
		f.Add(fixture(f, name))
	}
	f.Add([]byte(`<div id="content_left"><div class="result" mu="http://"><h3><a href="http://www.baidu.com/link?url=">t</a></h3><div data-tools="{url:'`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, page []byte) {
		hits, err := parseBaidu(page)
		if err != nil {
			return
		}
		for _, h := range hits {
			if h.Title == "" || !httpURL(h.URL) {
				t.Fatalf("hit %+v", h)
			}
			if h.redirect != "" && !strings.Contains(h.redirect, "/link") {
				t.Fatalf("redirect %q is not a Baidu link", h.redirect)
			}
		}
	})
}

func FuzzDuckDuckGoURL(f *testing.F) {
	f.Add("//duckduckgo.com/l/?uddg=https%3A%2F%2Fgo.dev%2F&rut=abc")
	f.Add("https://duckduckgo.com/y.js?ad_domain=x")
	f.Fuzz(func(t *testing.T, href string) {
		if u := duckduckgoURL(href); u != "" && !httpURL(u) {
			t.Fatalf("duckduckgoURL(%q) = %q", href, u)
		}
	})
}
