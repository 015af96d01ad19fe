package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestOpenStaysOnHost: a tab the data-flow rule judges (browser.tabs.open with
// stay_on_host) follows a redirect within its host, and stops at one to another host
// before any request reaches it, saying where it would have gone; the host then
// judges that hop (host/browser: open_tab).
func TestOpenStaysOnHost(t *testing.T) {
	b := startBrowserMethods(t, 2*time.Minute)
	other := serveOn(t, "127.0.0.7", func(w http.ResponseWriter, r *http.Request) { htmlPage(w, "other", "", "<p>other</p>") })
	mux := http.NewServeMux()
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/landed", http.StatusFound) })
	mux.HandleFunc("/cross", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/x?k=secret", http.StatusFound)
	})
	mux.HandleFunc("/landed", func(w http.ResponseWriter, r *http.Request) { htmlPage(w, "landed", "", "<p>ok</p>") })
	site := serveOn(t, "127.0.0.6", mux.ServeHTTP)

	var same struct {
		URL             string `json:"url"`
		StoppedRedirect string `json:"stopped_redirect"`
		TabID           int    `json:"tab_id"`
	}
	b.must("browser.tabs.open", map[string]any{"url": site.URL + "/same", "stay_on_host": true}, &same)
	if same.URL != site.URL+"/landed" || same.StoppedRedirect != "" {
		t.Errorf("a redirect within the host: %+v", same)
	}
	cross := same
	b.must("browser.tabs.open", map[string]any{"url": site.URL + "/cross", "stay_on_host": true}, &cross)
	if cross.StoppedRedirect != other.URL+"/x?k=secret" {
		t.Errorf("a redirect to another host: %+v", cross)
	}
	if h := other.heard(); strings.Contains(h, "secret") {
		t.Errorf("the other host heard the redirect: %q", h)
	}
	// browser_navigate's load is pinned the same way.
	var nav struct {
		StoppedRedirect string `json:"stopped_redirect"`
	}
	b.must("browser.page.navigate", map[string]any{"tab_id": same.TabID, "url": site.URL + "/cross", "stay_on_host": true}, &nav)
	if nav.StoppedRedirect != other.URL+"/x?k=secret" {
		t.Errorf("a navigation redirected to another host: %+v", nav)
	}
	if h := other.heard(); strings.Contains(h, "secret") {
		t.Errorf("the other host heard the navigation's redirect: %q", h)
	}
	// The same tab, pinned no more, goes there when asked to.
	var again struct {
		URL string `json:"url"`
	}
	b.must("browser.tabs.open", map[string]any{"url": site.URL + "/cross", "tab_id": cross.TabID}, &again)
	if !strings.HasPrefix(again.URL, other.URL) || !strings.Contains(other.heard(), "secret") {
		t.Errorf("without stay_on_host the redirect is followed: %+v, heard %q", again, other.heard())
	}
}
