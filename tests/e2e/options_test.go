package e2e

// The options page in Chromium: the settings sections read and write the host's
// settings (its refusals shown next to the field), a search key and a provider
// key typed into the page reach the host and nothing else, and screenshots of
// the side panel and the options page in each of the four languages.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/host/model/modeltest"
	"github.com/ferryhq/ferry/tests/browsertest"
)

// page opens an extension page in a new tab of the given size.
func (s *session) page(path string, width, height int64) context.Context {
	s.t.Helper()
	tab, cancel := chromedp.NewContext(s.browser.Ctx)
	s.t.Cleanup(cancel)
	url := "chrome-extension://" + buildinfo.ExtensionID + "/" + path
	if err := chromedp.Do(tab, chromedp.EmulateViewport(width, height), chromedp.Navigate(url)); err != nil {
		s.t.Fatalf("open %s: %v", url, err)
	}
	return tab
}

func (s *session) waitIn(tab context.Context, what, cond string) {
	s.t.Helper()
	if err := browsertest.WaitFor(s.ctx, tab, cond); err != nil {
		dump, _ := browsertest.Eval[string](tab, `document.body.innerText`)
		s.t.Fatalf("%s: %v\npage text:\n%.3000s", what, err, dump)
	}
}

// click clicks sel as a person would, having scrolled it to the middle of the view
// first: at an edge, a sticky bar (a card's Allow/Deny row) may lie over it.
func (s *session) click(tab context.Context, sel string) {
	s.t.Helper()
	if _, err := browsertest.Eval[bool](tab, `(e => (e?.scrollIntoView({block: 'center'}), true))(document.querySelector(`+jsString(sel)+`))`); err != nil {
		s.t.Fatalf("scroll to %s: %v", sel, err)
	}
	if err := chromedp.Do(tab, chromedp.Click(sel)); err != nil {
		s.t.Fatalf("click %s: %v", sel, err)
	}
}

// typeInto replaces a field's value the way a person does: clear, then type.
func (s *session) typeInto(tab context.Context, sel, text string) {
	s.t.Helper()
	if _, err := browsertest.Eval[bool](tab, `(e => (e.value = '', e.focus(), true))(document.querySelector(`+jsString(sel)+`))`); err != nil {
		s.t.Fatalf("clear %s: %v", sel, err)
	}
	if err := chromedp.Do(tab, chromedp.SendKeys(sel, text)); err != nil {
		s.t.Fatalf("type into %s: %v", sel, err)
	}
}

func (s *session) config(key string) string {
	s.t.Helper()
	out, err := ferry(s.t, s.home, "config", "get", key)
	if err != nil {
		s.t.Errorf("ferry config get %s: %v\n%s", key, err, out)
	}
	return strings.TrimSpace(out)
}

// screenshotDir is where the tests leave their pictures (gitignored).
func screenshotDir(t *testing.T) string {
	dir := filepath.Join(browsertest.RepoRoot(), "tests", "e2e", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(screenshotDir(t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Error(err)
	}
	t.Logf("wrote %s (%d bytes)", path, len(png))
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestOptionsSettingsAndWriteOnlyKeys(t *testing.T) {
	const providerKey = "sk-e2e-provider-7Q2Wv9"
	const bingKey = "bing-e2e-key-X4k8Lm"
	s := start(t, 90*time.Second)
	fake := modeltest.New(t, modeltest.OpenAI)
	fake.SetKey(providerKey) // the fake answers 401 unless the typed key reached the host
	fake.SetResponder(func(modeltest.Request) modeltest.Turn { return modeltest.Text("pong") })

	// Tap every message between the host and the extension: wrap connectNative
	// (a public chrome API), then make the worker reconnect by stopping its host.
	if _, err := browsertest.Eval[bool](s.sw, `(() => {
		globalThis.__fromHost = [];
		globalThis.__toHost = [];
		const real = chrome.runtime.connectNative.bind(chrome.runtime);
		chrome.runtime.connectNative = (name) => {
			const port = real(name);
			port.onMessage.addListener((m) => globalThis.__fromHost.push(JSON.stringify(m)));
			const post = port.postMessage.bind(port);
			port.postMessage = (m) => { globalThis.__toHost.push(JSON.stringify(m)); return post(m); };
			return port;
		};
		return true;
	})()`); err != nil {
		t.Fatal(err)
	}
	first := s.info()
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := browsertest.WaitFor(s.ctx, s.sw, `globalThis.__fromHost.length > 0 && ferryHost.state().state === 'connected'`); err != nil {
		t.Fatalf("the worker did not reconnect through the tapped port: %v", err)
	}

	tab := s.page("options/options.html", 1000, 900)
	// Record every reply the page gets from the worker (host results included).
	if _, err := browsertest.Eval[bool](tab, `(() => {
		globalThis.__replies = [];
		const real = chrome.runtime.sendMessage.bind(chrome.runtime);
		chrome.runtime.sendMessage = async (m) => { const r = await real(m); globalThis.__replies.push(JSON.stringify(r)); return r; };
		return true;
	})()`); err != nil {
		t.Fatal(err)
	}
	s.waitIn(tab, "host connected", `document.querySelector('#host-status')?.dataset.state === 'connected'`)
	s.waitIn(tab, "settings shown", `!document.querySelector('[data-field="tools.confirm_timeout_seconds"]').hidden &&
		document.querySelector('#s-confirm-timeout').value === '300'`)

	// Every control of the page is labelled (the node test checks the HTML; this the live DOM).
	unlabelled, err := browsertest.Eval[[]string](tab, `[...document.querySelectorAll('input, select, textarea')]
		.filter(e => e.type !== 'hidden' && e.labels.length === 0 && !e.getAttribute('aria-label') && !e.getAttribute('aria-labelledby'))
		.map(e => e.id || e.outerHTML.slice(0, 80))`)
	if err != nil || len(unlabelled) > 0 {
		t.Errorf("controls without a label: %v (err %v)", unlabelled, err)
	}

	// A value the host refuses: its reason under the field, nothing stored.
	s.typeInto(tab, "#s-confirm-timeout", "0")
	s.typeInto(tab, "#s-confirm-tools", "create_task\nclose_tab")
	s.click(tab, "#prefs-confirm button[type=submit]")
	s.waitIn(tab, "refusal next to the field", `document.querySelector('#s-confirm-timeout-error').textContent.trim() !== ''`)
	refusal, _ := browsertest.Eval[string](tab, `document.querySelector('#s-confirm-timeout-error').textContent`)
	invalid, _ := browsertest.Eval[bool](tab, `document.querySelector('#s-confirm-timeout').getAttribute('aria-invalid') === 'true'`)
	t.Logf("host refusal shown: %q", refusal)
	if strings.Contains(refusal, "invalid params") || !invalid {
		t.Errorf("refusal %q (aria-invalid %v): want the host's reason without the protocol prefix", refusal, invalid)
	}
	if got := s.config("tools.confirm_timeout_seconds"); got != "300" {
		t.Errorf("tools.confirm_timeout_seconds = %q after a refused save, want the default 300", got)
	}
	if got := s.config("tools.confirm"); got != "create_task,close_tab" {
		t.Errorf("tools.confirm = %q, want the list joined with commas", got)
	}
	s.typeInto(tab, "#s-confirm-timeout", "7")
	s.click(tab, "#prefs-confirm button[type=submit]")
	s.waitIn(tab, "saved", `document.querySelector('#s-confirm-timeout-error').textContent === '' &&
		!document.querySelector('#s-confirm-timeout').hasAttribute('aria-invalid')`)
	if got := s.config("tools.confirm_timeout_seconds"); got != "7" {
		t.Errorf("tools.confirm_timeout_seconds = %q, want 7", got)
	}

	// Other sections: the system prompt, a checkbox, an origin list, the engine.
	s.typeInto(tab, "#s-system-prompt", "Answer in one sentence.")
	s.click(tab, "#prefs-agent button[type=submit]")
	s.waitIn(tab, "agent saved", `document.querySelector('#prefs-agent .prefs-status').textContent !== ''`)
	if got := s.config("agent.system_prompt"); got != "Answer in one sentence." {
		t.Errorf("agent.system_prompt = %q", got)
	}
	s.typeInto(tab, "#s-auto-approve", "https://shop.example\nhttp://127.0.0.1:8080")
	s.click(tab, "#s-allow-navigate")
	s.click(tab, "#prefs-origins button[type=submit]")
	s.waitIn(tab, "origins saved", `document.querySelector('#prefs-origins .prefs-status').textContent !== ''`)
	if got := s.config("browser.allow_navigate"); got != "true" {
		t.Errorf("browser.allow_navigate = %q, want true", got)
	}
	if got := s.config("browser.scripts_auto_approve_origins"); !strings.Contains(got, "https://shop.example") {
		t.Errorf("browser.scripts_auto_approve_origins = %q", got)
	}

	// A search key: typed once, then only "set".
	notSet, _ := browsertest.Eval[string](tab, `document.querySelector('#s-bing-key-state').textContent`)
	if err := chromedp.Do(tab, chromedp.SetValue("#s-engine", "bing"), chromedp.SendKeys("#s-bing-key", bingKey)); err != nil {
		t.Fatal(err)
	}
	s.click(tab, "#prefs-web button[type=submit]")
	s.waitIn(tab, "key set", `document.querySelector('#s-bing-key-state').textContent !== `+jsString(notSet)+` && document.querySelector('#s-bing-key').value === ''`)
	if got := s.config("search.engine"); got != "bing" {
		t.Errorf("search.engine = %q, want bing", got)
	}

	// A provider added in the form, its key typed once; the test button reaches
	// the fake, which accepts only that key.
	s.typeInto(tab, "#pf-id", "fake")
	s.typeInto(tab, "#pf-base-url", fake.URL)
	s.typeInto(tab, "#pf-model", "fake-model")
	s.typeInto(tab, "#pf-key", providerKey)
	s.click(tab, "#pf-default")
	s.click(tab, "#provider-form button[type=submit]")
	s.waitIn(tab, "provider listed", `[...document.querySelectorAll('#provider-rows tr')].some(tr => tr.textContent.includes('fake-model'))`)
	if v, _ := browsertest.Eval[string](tab, `document.querySelector('#pf-key').value`); v != "" {
		t.Errorf("the key field still holds %q after saving", v)
	}
	s.click(tab, `#provider-rows tr td:last-child button:nth-child(2)`)
	s.waitIn(tab, "provider test answered", `document.querySelector('#provider-test-result').textContent.includes('pong')`)
	if n := len(fake.Requests()); n == 0 {
		t.Errorf("the fake model got no request")
	} else if auth := fake.Last().Header.Get("Authorization"); !strings.Contains(auth, providerKey) {
		t.Errorf("the fake got Authorization %q, want the typed key", auth)
	}
	screenshot(t, tab, "options-filled-en.png")

	// Where the keys must not be: extension storage, any message from the host,
	// any reply the page received.
	// The manifest asks for no storage permission: chrome.storage is not even there.
	storage, err := browsertest.Eval[string](s.sw, `typeof chrome.storage === 'undefined' ? '' : Promise.all([chrome.storage.local.get(null), chrome.storage.session.get(null)]).then(x => JSON.stringify(x))`)
	if err != nil {
		t.Fatal(err)
	}
	fromHost, _ := browsertest.Eval[[]string](s.sw, `globalThis.__fromHost`)
	toHost, _ := browsertest.Eval[[]string](s.sw, `globalThis.__toHost`)
	replies, _ := browsertest.Eval[[]string](tab, `globalThis.__replies`)
	sentKey := false
	for _, m := range toHost {
		sentKey = sentKey || (strings.Contains(m, "providers.save") && strings.Contains(m, providerKey))
	}
	if !sentKey || len(fromHost) < 5 || len(replies) < 5 {
		t.Fatalf("the taps saw too little: key sent %v, %d from the host, %d replies", sentKey, len(fromHost), len(replies))
	}
	t.Logf("checked %d host→extension messages, %d replies to the page, storage %d bytes", len(fromHost), len(replies), len(storage))
	for _, key := range []string{providerKey, bingKey} {
		if strings.Contains(storage, key) {
			t.Errorf("a key reached extension storage: %.300s", storage)
		}
		for _, m := range append(fromHost, replies...) {
			if strings.Contains(m, key) {
				t.Errorf("a key reached the extension: %.300s", m)
			}
		}
	}
	var list struct {
		Providers []struct {
			ID     string `json:"id"`
			KeySet bool   `json:"key_set"`
		} `json:"providers"`
	}
	s.must("providers.list", map[string]any{}, &list)
	if len(list.Providers) != 1 || !list.Providers[0].KeySet {
		t.Errorf("providers.list = %+v, want fake with key_set", list.Providers)
	}
	var settings struct {
		SecretsSet []string `json:"secrets_set"`
	}
	s.must("settings.list", map[string]any{}, &settings)
	if !strings.Contains(strings.Join(settings.SecretsSet, ","), "search.bing.key") {
		t.Errorf("secrets_set = %v, want search.bing.key", settings.SecretsSet)
	}
}

// TestScreenshotsInFourLanguages leaves the side panel (a run waiting for a
// confirmation, then done) and the options page in en, zh_CN, zh_TW and es in
// tests/e2e/screenshots, and checks that each page speaks its language and
// that nothing sticks out sideways.
func TestScreenshotsInFourLanguages(t *testing.T) {
	langs := []struct{ locale, lang, env, want string }{
		{"en", "en", "en_US", "Allow"},
		{"zh_CN", "zh-CN", "zh_CN", "允许"},
		{"zh_TW", "zh-TW", "zh_TW", "允許"},
		{"es", "es", "es_ES", "Permitir"},
	}
	for _, l := range langs {
		t.Run(l.locale, func(t *testing.T) {
			// chrome.i18n follows the browser's UI language, which Chromium takes
			// from LANGUAGE only when it has that language's resources.
			pak := strings.ReplaceAll(l.lang, "_", "-") + ".pak"
			if l.lang == "en" {
				pak = "en-US.pak"
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(resolved(browsertest.RequireChromium(t))), "locales", pak)); err != nil {
				t.Skipf("Chromium has no %s (Debian: apt-get install chromium-l10n; CJK text also needs a font such as fonts-wqy-zenhei): %v", pak, err)
			}
			s := start(t, 90*time.Second, "LANGUAGE="+l.env, "LANG="+l.env+".UTF-8")
			fake := modeltest.New(t, modeltest.OpenAI)
			fake.SetResponder(func(req modeltest.Request) modeltest.Turn {
				if req.N == 1 {
					return modeltest.Turn{Text: "Let me note that.", ToolCalls: []modeltest.Call{{ID: "call_1", Name: "create_task", Arguments: `{"subject":"Compare the three offers","description":"price, delivery, warranty"}`}}}
				}
				return modeltest.Text("Done: **one task** added.\n\n- compare offers\n- report back")
			})
			if out, err := ferryIn(t, s.home, "", "provider", "add", "fake", "--kind", modeltest.OpenAI, "--base-url", fake.URL, "--model", "fake-model", "--default"); err != nil {
				t.Fatalf("ferry provider add: %v\n%s", err, out)
			}
			if out, err := ferryIn(t, s.home, "", "config", "set", "tools.confirm", "create_task"); err != nil {
				t.Fatalf("ferry config set: %v\n%s", err, out)
			}

			panel := s.page("sidepanel/sidepanel.html", 420, 760)
			s.waitIn(panel, "host connected", `document.querySelector('#host-status')?.dataset.state === 'connected' && !document.querySelector('#send').disabled`)
			if lang, _ := browsertest.Eval[string](panel, `document.documentElement.lang`); lang != l.lang {
				t.Errorf("side panel lang = %q, want %q (is the browser's UI language forced?)", lang, l.lang)
			}
			if err := chromedp.Do(panel, chromedp.SendKeys("#input", "Plan my shopping"), chromedp.Click("#send")); err != nil {
				t.Fatal(err)
			}
			s.waitIn(panel, "confirmation", `document.querySelector('.prompt.confirm') !== null`)
			if text, _ := browsertest.Eval[string](panel, `document.querySelector('.prompt.confirm').innerText`); !strings.Contains(text, l.want) {
				t.Errorf("confirmation card in %s: %q, want %q in it", l.locale, text, l.want)
			}
			if overflow, _ := browsertest.Eval[[]string](panel, overflowCheck); len(overflow) > 0 {
				t.Errorf("side panel elements wider than the panel: %v", overflow)
			}
			screenshot(t, panel, "sidepanel-"+l.locale+".png")
			s.click(panel, `.prompt.confirm button:not(.quiet)`)
			s.waitIn(panel, "answer", `document.querySelector('#stop').hidden && [...document.querySelectorAll('.msg.assistant')].some(e => e.textContent.includes('one task'))`)
			screenshot(t, panel, "sidepanel-done-"+l.locale+".png")

			opts := s.page("options/options.html", 900, 900)
			s.waitIn(opts, "settings shown", `document.querySelector('#host-status')?.dataset.state === 'connected' &&
				!document.querySelector('[data-field="agent.system_prompt"]').hidden &&
				document.querySelectorAll('#provider-rows tr').length === 1`)
			if lang, _ := browsertest.Eval[string](opts, `document.documentElement.lang`); lang != l.lang {
				t.Errorf("options lang = %q, want %q", lang, l.lang)
			}
			if overflow, _ := browsertest.Eval[[]string](opts, overflowCheck); len(overflow) > 0 {
				t.Errorf("options page elements wider than the page: %v", overflow)
			}
			screenshot(t, opts, "options-"+l.locale+".png")
			if png, err := chromedp.Run(opts, chromedp.Screenshot("#prefs-web")); err == nil {
				_ = os.WriteFile(filepath.Join(screenshotDir(t), "options-web-"+l.locale+".png"), png, 0o644)
			} else {
				t.Errorf("screenshot of the web section: %v", err)
			}
		})
	}
}

// resolved follows a launcher script (Debian's /usr/bin/chromium) to the
// directory of the real binary, where its locales are.
func resolved(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	if b, err := os.ReadFile(path); err == nil && len(b) < 64<<10 && strings.HasPrefix(string(b), "#!") {
		for _, dir := range []string{"/usr/lib/chromium", "/usr/lib/chromium-browser"} {
			if _, err := os.Stat(filepath.Join(dir, "locales")); err == nil {
				return filepath.Join(dir, "chromium")
			}
		}
	}
	return path
}

// overflowCheck lists visible elements that stick out of the viewport sideways.
const overflowCheck = `[...document.querySelectorAll('body *')].filter(e => {
	const r = e.getBoundingClientRect();
	return r.width > 0 && r.right > document.documentElement.clientWidth + 1 && !e.closest('.table-wrap, pre');
}).map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + String(e.className).split(' ')[0] : '')).slice(0, 10)`

// TestOptionsWorkspace browses the workspace in the options page: a folder, a text
// file whose markup is shown as text, a download, a delete after the confirmation,
// and the usage against the quota.
func TestOptionsWorkspace(t *testing.T) {
	s := start(t, 90*time.Second)
	for path, content := range map[string]string{
		"notes/todo.md": "<img src=x onerror=\"document.title='pwned'\">buy milk\n",
		"report.txt":    "quarterly numbers\n",
	} {
		var res struct {
			Success bool   `json:"success"`
			Reason  string `json:"reason"`
		}
		s.must("tools.call", map[string]any{"name": "opfs_write", "arguments": map[string]string{"path": path, "content": content}}, &res)
		if !res.Success {
			t.Fatalf("opfs_write %s: %s", path, res.Reason)
		}
	}
	tab := s.page("options/options.html", 1100, 1400)
	s.waitIn(tab, "workspace listed", `[...document.querySelectorAll('#ws-rows tr')].length === 2`)
	s.waitIn(tab, "usage shown", `document.querySelector('#ws-usage-text').textContent.includes('%')`)
	// Into the folder, view the file: its markup is text, never parsed.
	s.click(tab, `#ws-rows tr:first-child td:first-child button`)
	s.waitIn(tab, "folder opened", `document.querySelector('#ws-crumbs').textContent.includes('notes') && document.querySelector('#ws-rows').textContent.includes('todo.md')`)
	s.click(tab, `#ws-rows tr:first-child td:last-child button:nth-child(1)`)
	s.waitIn(tab, "file shown", `!document.querySelector('#ws-viewer').hidden && document.querySelector('#ws-viewer-text').textContent.includes('buy milk')`)
	if n, _ := browsertest.Eval[int](tab, `document.querySelectorAll('#ws-viewer img').length`); n != 0 || func() bool {
		title, _ := browsertest.Eval[string](tab, `document.title`)
		return title == "pwned"
	}() {
		t.Fatal("the file's markup was parsed")
	}
	// Download: a blob URL with the file's name.
	if _, err := browsertest.Eval[bool](tab, `(() => { globalThis.__downloads = []; const orig = HTMLAnchorElement.prototype.click;
		HTMLAnchorElement.prototype.click = function () { globalThis.__downloads.push([this.download, this.href]); }; return true; })()`); err != nil {
		t.Fatal(err)
	}
	s.click(tab, `#ws-rows tr:first-child td:last-child button:nth-child(2)`)
	s.waitIn(tab, "download started", `globalThis.__downloads.length === 1 && globalThis.__downloads[0][0] === 'todo.md' && globalThis.__downloads[0][1].startsWith('blob:')`)
	screenshot(t, tab, "options-workspace-en.png")
	// Delete after the confirmation; the emptied folder falls back to the root.
	if _, err := browsertest.Eval[bool](tab, `(globalThis.confirm = () => true, true)`); err != nil {
		t.Fatal(err)
	}
	s.click(tab, `#ws-rows tr:first-child td:last-child button:nth-child(3)`)
	s.waitIn(tab, "file deleted", `document.querySelector('#ws-status').textContent.includes('1') && [...document.querySelectorAll('#ws-rows tr')].length === 1 && document.querySelector('#ws-rows').textContent.includes('report.txt')`)
	var usage struct {
		Bytes int64 `json:"bytes"`
		Quota int64 `json:"quota"`
	}
	s.must("workspace.usage", map[string]any{}, &usage)
	if usage.Bytes != int64(len("quarterly numbers\n")) || usage.Quota <= 0 {
		t.Errorf("workspace.usage after the delete = %+v", usage)
	}
}

// TestReadableAt200PercentZoom opens both pages as they are at 200% browser zoom (half
// the CSS width, twice the pixel density): nothing may stick out sideways, and the
// controls a person needs stay on screen.
func TestReadableAt200PercentZoom(t *testing.T) {
	s := start(t, 60*time.Second)
	open := func(path string, width, height int64) context.Context {
		tab, cancel := chromedp.NewContext(s.browser.Ctx)
		t.Cleanup(cancel)
		url := "chrome-extension://" + buildinfo.ExtensionID + "/" + path
		if err := chromedp.Do(tab, chromedp.EmulateViewport(width, height, chromedp.EmulateScale(2)), chromedp.Navigate(url)); err != nil {
			t.Fatalf("open %s: %v", url, err)
		}
		return tab
	}
	// A 420 px side panel and a 900 px options tab, at 200%.
	panel := open("sidepanel/sidepanel.html", 210, 380)
	s.waitIn(panel, "host connected", `document.querySelector('#host-status')?.dataset.state === 'connected'`)
	if overflow, _ := browsertest.Eval[[]string](panel, overflowCheck); len(overflow) > 0 {
		t.Errorf("side panel at 200%%: elements wider than the panel: %v", overflow)
	}
	inView := `(() => { const r = document.querySelector(%q).getBoundingClientRect();
		return r.width > 0 && r.left >= 0 && r.right <= document.documentElement.clientWidth + 1; })()`
	for _, sel := range []string{"#input", "#send"} {
		if ok, _ := browsertest.Eval[bool](panel, fmt.Sprintf(inView, sel)); !ok {
			t.Errorf("side panel at 200%%: %s is not within the panel's width", sel)
		}
	}
	screenshot(t, panel, "sidepanel-zoom200-en.png")

	opts := open("options/options.html", 450, 450)
	s.waitIn(opts, "options connected", `document.querySelector('#host-status')?.dataset.state === 'connected'`)
	if overflow, _ := browsertest.Eval[[]string](opts, overflowCheck); len(overflow) > 0 {
		t.Errorf("options page at 200%%: elements wider than the page: %v", overflow)
	}
	screenshot(t, opts, "options-zoom200-en.png")
}

// TestOptionsAuditAndTerminalAgree: a call from the browser and one from the
// terminal are in both views of the audit log, the options page (filtered by caller)
// and `ferry audit`.
func TestOptionsAuditAndTerminalAgree(t *testing.T) {
	s := start(t, 90*time.Second)
	var res map[string]any
	s.must("tools.call", map[string]any{"name": "list_tasks", "arguments": map[string]any{}}, &res)
	if out, err := ferry(t, s.home, "call", "no_such_tool"); err == nil || !strings.Contains(out, "NOT_FOUND") {
		t.Fatalf("ferry call: %v %s", err, out)
	}
	tab := s.page("options/options.html", 1100, 1400)
	rows := `[...document.querySelectorAll('#audit-rows tr')].map((tr) => [...tr.cells].map((c) => c.textContent))`
	s.waitIn(tab, "both calls listed", rows+`.length === 2`)
	s.typeInto(tab, "#af-caller", "cli")
	s.click(tab, `#audit-form button[type="submit"]`)
	s.waitIn(tab, "the terminal's call alone", rows+`.length === 1 && `+rows+`[0][1] === 'cli' && `+rows+`[0][2] === 'no_such_tool' && `+rows+`[0][4] === 'NOT_FOUND'`)

	out, err := ferry(t, s.home, "audit", "--caller", "extension", "--json")
	var row struct{ Tool, Caller string }
	if err != nil || json.Unmarshal([]byte(out), &row) != nil || row.Tool != "list_tasks" || row.Caller != "extension" {
		t.Fatalf("ferry audit --caller extension: %v %s", err, out)
	}
}
