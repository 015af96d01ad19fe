package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/ferryhq/ferry/host/model/modeltest"
	"github.com/ferryhq/ferry/tests/browsertest"
)

// TestAdminPage drives /admin in Chromium, in each of its four languages: sign in
// with an admin's token, add a user, see that user's request appear in usage and
// in the audit, export both as CSV. A model name made of HTML, sent by a client,
// shows as text.
func TestAdminPage(t *testing.T) {
	chromium := browsertest.RequireChromium(t)
	tm := newTeam(t, "sqlite")
	adminTok := tm.addUser("root", "--admin")
	tm.gw.waitGeneration(t, 7)
	hostile := `<img src=x id=pwned onerror="document.title='pwned'">`
	readAll(t, post(t, tm.gw.URL+"/v1/chat/completions", tm.tok, "openai", chatBody("openai", hostile, "hi", false, nil)))

	downloads := t.TempDir()
	ctx, cancel := chromedp.NewExecAllocator(context.Background(), append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", "new"),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("user-data-dir", t.TempDir()),
	}, browsertest.NetworkOptions(browsertest.ClosedProxy)...)...)
	defer cancel()
	ctx, cancel = chromedp.NewContext(ctx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads}); err != nil {
		t.Fatal(err)
	}
	fail := func(t *testing.T, what string, err error) {
		t.Helper()
		body, _ := browsertest.Eval[string](ctx, `document.body.innerText`)
		t.Fatalf("%s: %v\npage:\n%.2000s", what, err, body)
	}
	wait := func(t *testing.T, cond string) {
		t.Helper()
		if err := browsertest.WaitFor(ctx, ctx, cond); err != nil {
			fail(t, "waiting", err)
		}
	}
	text := func(t *testing.T, sel string) string {
		t.Helper()
		wait(t, `!!document.querySelector(`+jsString(sel)+`)`)
		v, err := browsertest.Eval[string](ctx, `document.querySelector(`+jsString(sel)+`).textContent`)
		if err != nil {
			fail(t, "reading "+sel, err)
		}
		return v
	}
	click := func(t *testing.T, sel string) {
		t.Helper()
		wait(t, `!!document.querySelector(`+jsString(sel)+`)`)
		if err := chromedp.Do(ctx, chromedp.Click(sel)); err != nil {
			fail(t, "click "+sel, err)
		}
	}
	typeInto := func(t *testing.T, sel, v string) {
		t.Helper()
		wait(t, `!!document.querySelector(`+jsString(sel)+`)`)
		if _, err := browsertest.Eval[bool](ctx, `(e => (e.value = '', e.focus(), true))(document.querySelector(`+jsString(sel)+`))`); err != nil {
			fail(t, "clear "+sel, err)
		}
		if err := chromedp.Do(ctx, chromedp.SendKeys(sel, v)); err != nil {
			fail(t, "type into "+sel, err)
		}
	}

	for i, lang := range []string{"en", "zh_CN", "zh_TW", "es"} {
		t.Run(lang, func(t *testing.T) {
			var cat map[string]string
			b, err := os.ReadFile(filepath.Join("..", "admin", "assets", "i18n", lang+".json"))
			if err != nil {
				t.Fatal(err)
			}
			json.Unmarshal(b, &cat)
			if err := chromedp.Do(ctx, chromedp.Navigate(tm.gw.URL+"/admin?lang="+lang)); err != nil {
				fail(t, "open", err)
			}
			wait(t, `!!document.querySelector("#token")`)
			htmlLang, _ := browsertest.Eval[string](ctx, `document.documentElement.lang`)
			if got := text(t, "#signin"); got != cat["signIn"] || htmlLang != strings.ReplaceAll(lang, "_", "-") {
				t.Fatalf("sign-in page in %s: button %q, lang %q", lang, got, htmlLang)
			}
			// A wrong token is refused with the catalog's words.
			typeInto(t, "#token", "fgw_wrong")
			click(t, "#signin")
			wait(t, `!!document.querySelector("#status.error")`)
			if got := text(t, "#status"); got != cat["errUnauthorized"] {
				t.Errorf("wrong token says %q", got)
			}
			typeInto(t, "#token", adminTok)
			click(t, "#signin")
			wait(t, `!!document.querySelector("#users-table")`)
			if got := text(t, "#nav-usage"); got != cat["navUsage"] {
				t.Errorf("usage tab %q, want %q", got, cat["navUsage"])
			}
			name := "user-" + strings.ToLower(strings.ReplaceAll(lang, "_", "-"))
			typeInto(t, "#user-name", name)
			typeInto(t, "#user-team", "lab")
			typeInto(t, "#user-daily", "50000")
			click(t, "#user-add")
			wait(t, `!!document.querySelector("#new-token")`)
			token := strings.TrimSpace(text(t, "#new-token"))
			if users := text(t, "#users-table"); !strings.Contains(users, name) || !strings.Contains(users, "50") {
				t.Errorf("users table lacks the new user: %s", users)
			}

			// The new user's request appears in usage and the audit.
			tm.oa.Add(modeltest.Turn{Text: "hello admin", InputTokens: 17, OutputTokens: 4})
			tm.gw.waitGeneration(t, int64(8+i))
			resp := post(t, tm.gw.URL+"/v1/chat/completions", token, "openai", chatBody("openai", "gpt", "hi", false, nil), "X-Ferry-Trace-Id", "trace-admin-"+lang)
			if body := readAll(t, resp); resp.StatusCode != 200 {
				t.Fatalf("the new user's request: %d %s", resp.StatusCode, body)
			}
			tm.requests(1, "--user", name)
			click(t, "#nav-usage")
			wait(t, `!!document.querySelector("#usage-table") && !!document.querySelector("#usage-chart rect")`)
			if usage := text(t, "#usage-table"); !strings.Contains(usage, name) || !strings.Contains(usage, "17") {
				t.Errorf("usage table lacks %s's 17 input tokens: %s", name, usage)
			}
			if got := text(t, "#usage-table th"); got != cat["day"] {
				t.Errorf("usage header %q, want %q", got, cat["day"])
			}
			click(t, "#export-usage")
			waitFile(t, filepath.Join(downloads, "ferry-gateway-usage.csv"), name)
			click(t, "#nav-audit")
			wait(t, `!!document.querySelector("#audit-table")`)
			auditText, actions := text(t, "#audit-table"), text(t, "#actions-table")
			if !strings.Contains(auditText, name) || !strings.Contains(auditText, "trace-admin-"+lang) || !strings.Contains(actions, "user.add") {
				t.Errorf("audit lacks the request or the admin action:\n%s\n%s", auditText, actions)
			}
			// The hostile model name is text, not an element.
			pwned, _ := browsertest.Eval[bool](ctx, `!!document.getElementById("pwned") || document.title === "pwned"`)
			if pwned || !strings.Contains(auditText, "<img src=x") {
				t.Errorf("a model name from a client became HTML (pwned %v)", pwned)
			}
			click(t, "#export-audit")
			waitFile(t, filepath.Join(downloads, "ferry-gateway-audit.csv"), "trace-admin-"+lang)

			click(t, "#signout")
			wait(t, `!!document.querySelector("#token")`)
			if title, _ := browsertest.Eval[string](ctx, `document.title`); title != cat["title"] {
				t.Errorf("title %q, want %q", title, cat["title"])
			}
		})
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// waitFile waits for a downloaded file holding want, and removes it.
func waitFile(t *testing.T, path, want string) {
	t.Helper()
	var last string
	waitFor(t, "download of "+filepath.Base(path), func() bool {
		b, err := os.ReadFile(path)
		last = string(b)
		return err == nil && strings.Contains(last, want)
	})
	if !strings.HasPrefix(last, "day,") && !strings.HasPrefix(last, "id,") {
		t.Errorf("%s does not start with its header: %.80q", path, last)
	}
	os.Remove(path)
}
