package e2e

// The side panel in Chromium: opened as a page of the extension, it sends a
// message with a fake model, streams the answer, shows a tool card and a
// confirmation card that a click approves, and the task list the tool changed.

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/host/model/modeltest"
	"github.com/ferryhq/ferry/tests/browsertest"
)

func TestSidePanelChatWithConfirmation(t *testing.T) {
	s := start(t, 90*time.Second)
	fake := modeltest.New(t, modeltest.OpenAI)
	fake.SetResponder(func(req modeltest.Request) modeltest.Turn {
		if req.N == 1 {
			return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "call_task", Name: "create_task", Arguments: `{"subject":"Compare <b>prices</b>"}`}}}
		}
		return modeltest.Text("All **done**: <img src=x onerror=alert(1)> see [docs](javascript:alert(1)).")
	})
	if out, err := ferryIn(t, s.home, "", "provider", "add", "fake", "--kind", modeltest.OpenAI, "--base-url", fake.URL, "--model", "fake-model", "--default"); err != nil {
		t.Fatalf("ferry provider add: %v\n%s", err, out)
	}
	// create_task asks first, so the panel must show a confirmation.
	if out, err := ferryIn(t, s.home, "", "config", "set", "tools.confirm", "create_task"); err != nil {
		t.Fatalf("ferry config set: %v\n%s", err, out)
	}

	tab, cancel := chromedp.NewContext(s.browser.Ctx)
	defer cancel()
	url := "chrome-extension://" + buildinfo.ExtensionID + "/sidepanel/sidepanel.html"
	if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	wait := func(what, cond string) {
		t.Helper()
		if err := browsertest.WaitFor(s.ctx, tab, cond); err != nil {
			dump, _ := browsertest.Eval[string](tab, `document.body.innerText`)
			t.Fatalf("%s: %v\npanel text:\n%s", what, err, dump)
		}
	}
	wait("host connected", `document.querySelector('#host-status')?.dataset.state === 'connected'`)
	wait("send enabled", `!document.querySelector('#send').disabled`)

	if err := chromedp.Do(tab, chromedp.SendKeys("#input", "Make me a task")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.Click("#send")); err != nil {
		t.Fatal(err)
	}
	wait("confirmation card", `document.querySelector('.prompt.confirm') !== null`)
	card, err := browsertest.Eval[string](tab, `document.querySelector('.prompt.confirm').innerText`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(card, "create_task") || !strings.Contains(card, "Compare <b>prices</b>") {
		t.Errorf("confirmation card text: %q", card)
	}
	focused, _ := browsertest.Eval[bool](tab, `document.activeElement === document.querySelector('.prompt.confirm')`)
	if !focused {
		t.Errorf("the confirmation card does not have the focus")
	}
	if err := chromedp.Do(tab, chromedp.Click(`.prompt.confirm button:not(.quiet)`)); err != nil {
		t.Fatal(err)
	}
	wait("streamed answer", `[...document.querySelectorAll('.msg.assistant')].some(e => e.textContent.includes('All done'))`)
	wait("run over", `document.querySelector('#stop').hidden`)

	checks := map[string]string{
		"bold rendered":       `!!document.querySelector('.msg.assistant strong')`,
		"img stays text":      `document.querySelector('.msg.assistant img') === null && document.querySelector('.msg.assistant').textContent.includes('<img src=x onerror=alert(1)>')`,
		"no javascript: link": `[...document.querySelectorAll('a')].every(a => a.protocol === 'http:' || a.protocol === 'https:')`,
		"tool card ok":        `document.querySelector('.tool-card .tool-name')?.textContent === 'create_task' && document.querySelector('.tool-card').classList.contains('ok')`,
		"task list":           `!document.querySelector('#tasks').hidden && document.querySelector('#task-list').textContent.includes('Compare <b>prices</b>')`,
		"no prompt left":      `document.querySelector('.prompt') === null`,
		"user message shown":  `document.querySelector('.msg.user')?.textContent === 'Make me a task'`,
	}
	for name, cond := range checks {
		ok, err := browsertest.Eval[bool](tab, cond)
		if err != nil || !ok {
			dump, _ := browsertest.Eval[string](tab, `document.querySelector('#messages').innerText`)
			t.Errorf("%s: %v (err %v)\n%s", name, ok, err, dump)
		}
	}

	// Diagnostics of the run: the model calls with the tools sent.
	if err := chromedp.Do(tab, chromedp.Click("#toggle-diagnostics")); err != nil {
		t.Fatal(err)
	}
	wait("diagnostics", `document.querySelectorAll('#diagnostics-body .model-call').length === 2`)
	diag, _ := browsertest.Eval[string](tab, `document.querySelector('#diagnostics-body').textContent`)
	if !strings.Contains(diag, "create_task") {
		t.Errorf("diagnostics do not list the tools sent: %.300s", diag)
	}
}
