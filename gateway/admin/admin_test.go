package admin

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/ferryhq/ferry/gateway/auth"
	"github.com/ferryhq/ferry/gateway/store"
)

func TestLanguage(t *testing.T) {
	for _, c := range []struct{ q, al, want string }{
		{"", "", "en"},
		{"es", "zh-CN", "es"},
		{"xx", "zh-TW,zh;q=0.8", "zh_TW"},
		{"", "zh-Hant-HK", "zh_TW"},
		{"", "zh-Hans-CN,en;q=0.5", "zh_CN"},
		{"", "fr-FR,es;q=0.7,en;q=0.9", "en"},
		{"", "fr-FR,es-MX;q=0.7", "es"},
		{"zh_CN", "", "zh_CN"},
	} {
		if got := Language(c.q, c.al); got != c.want {
			t.Errorf("Language(%q, %q) = %q, want %q", c.q, c.al, got, c.want)
		}
	}
}

// TestCatalogs: the four catalogs have the same keys, every key the page's script
// asks for is in them, and none is unused.
func TestCatalogs(t *testing.T) {
	var keys []string
	for i, l := range Languages {
		b, err := assets.ReadFile("assets/i18n/" + l + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		var ks []string
		for k, v := range m {
			ks = append(ks, k)
			if strings.TrimSpace(v) == "" {
				t.Errorf("%s: %s is empty", l, k)
			}
		}
		sort.Strings(ks)
		if i == 0 {
			keys = ks
		} else if strings.Join(ks, ",") != strings.Join(keys, ",") {
			t.Errorf("%s's keys differ from en's", l)
		}
	}
	js, _ := assets.ReadFile("assets/admin.js")
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`\bt\("([A-Za-z]+)"`).FindAllStringSubmatch(string(js), -1) {
		used[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`label: "([A-Za-z]+)"|\["[a-z]+", "([A-Za-z]+)"\]|field\("[a-z-]+", "([A-Za-z]+)"`).FindAllStringSubmatch(string(js), -1) {
		for _, g := range m[1:] {
			if g != "" {
				used[g] = true
			}
		}
	}
	have := map[string]bool{}
	for _, k := range keys {
		have[k] = true
	}
	for k := range used {
		if !have[k] {
			t.Errorf("admin.js uses %q, which the catalogs lack", k)
		}
	}
}

// TestPageStandards: strict CSP and the other headers on every answer; no inline
// script or style, no inline handler; the script never parses HTML.
func TestPageStandards(t *testing.T) {
	a := New(nil, func() *auth.Snapshot { return auth.NewSnapshot(&store.Config{}) }, nil, zerolog.Nop())
	for _, path := range []string{"/admin", "/admin/assets/admin.js", "/admin/api/users"} {
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Header().Get("Content-Security-Policy") != CSP || rec.Header().Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", path, rec.Header())
		}
		if path == "/admin/api/users" && rec.Code != http.StatusUnauthorized {
			t.Errorf("the API without a token: %d", rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/admin", nil)
	req.Header.Set("Accept-Language", "es-ES")
	a.ServeHTTP(rec, req)
	page := rec.Body.String()
	if !strings.Contains(page, `<html lang="es" data-lang="es">`) {
		t.Errorf("page language: %.200s", page)
	}
	if regexp.MustCompile(`<script(?:[^>]*)>\s*[^<\s]`).MatchString(page) || strings.Contains(page, "<style") || regexp.MustCompile(`\son[a-z]+=`).MatchString(page) {
		t.Error("the page has inline script, style or handlers")
	}
	fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if strings.HasSuffix(p, ".js") {
			b, _ := assets.ReadFile(p)
			for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
				if strings.Contains(string(b), bad) {
					t.Errorf("%s uses %s", p, bad)
				}
			}
		}
		return nil
	})
	if cell("=HYPERLINK(1)") != "'=HYPERLINK(1)" || cell("alice") != "alice" || cell("-1") != "'-1" {
		t.Error("CSV cells are not guarded against formulas")
	}
}
