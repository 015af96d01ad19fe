package e2e

// The side panel in Chromium: opened as a page of the extension, it sends a
// message with a fake model, streams the answer, shows a tool card and a
// confirmation card that a click approves, and the task list the tool changed.

import (
	"context"
	"fmt"
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
	if !strings.Contains(card, "create_task") || !strings.Contains(card, "Compare <b>prices</b>") || !strings.Contains(card, "Asked by the agent") {
		t.Errorf("confirmation card text: %q", card)
	}
	// The card waits to be reached: it never takes the focus from where the person is.
	stole, _ := browsertest.Eval[bool](tab, `document.querySelector('.prompt.confirm').contains(document.activeElement)`)
	if stole {
		t.Errorf("the confirmation card took the keyboard focus")
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

// openPanel opens the side panel as a page and waits until it can send.
func openPanel(t *testing.T, s *session) context.Context {
	t.Helper()
	tab := s.page("sidepanel/sidepanel.html", 420, 800)
	s.waitIn(tab, "host connected", `document.querySelector('#host-status')?.dataset.state === 'connected' && !document.querySelector('#send').disabled`)
	return tab
}

func TestSidePanelConfirmationTimesOut(t *testing.T) {
	s := start(t, 90*time.Second)
	fake := modeltest.New(t, modeltest.OpenAI)
	fake.SetResponder(func(req modeltest.Request) modeltest.Turn {
		if req.N == 1 {
			return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "call_task", Name: "create_task", Arguments: `{"subject":"never"}`}}}
		}
		return modeltest.Text("Understood, nothing was done.")
	})
	for _, args := range [][]string{
		{"provider", "add", "fake", "--kind", modeltest.OpenAI, "--base-url", fake.URL, "--model", "fake-model", "--default"},
		{"config", "set", "tools.confirm", "create_task"},
		{"config", "set", "tools.confirm_timeout_seconds", "1"},
	} {
		if out, err := ferryIn(t, s.home, "", args...); err != nil {
			t.Fatalf("ferry %v: %v\n%s", args, err, out)
		}
	}
	tab := openPanel(t, s)
	s.typeInto(tab, "#input", "Make me a task")
	s.click(tab, "#send")
	s.waitIn(tab, "confirmation card", `document.querySelector('.prompt.confirm') !== null`)
	// Nobody answers: the card goes, a note says why, the tool card carries the code.
	s.waitIn(tab, "timed-out note", `document.querySelector('.prompt.confirm') === null && document.querySelector('#prompts .notice.warn') !== null`)
	s.waitIn(tab, "tool card with the code", `[...document.querySelectorAll('.tool-card')].some(c => c.textContent.includes('CONFIRM_TIMEOUT'))`)
	s.waitIn(tab, "run over", `document.querySelector('#stop').hidden && [...document.querySelectorAll('.msg.assistant')].some(e => e.textContent.includes('nothing was done'))`)
	reqs := fake.Requests()
	if len(reqs) < 2 {
		t.Fatalf("the model was asked %d times, want 2", len(reqs))
	}
	found := false
	for _, m := range reqs[1].Messages {
		for _, r := range m.ToolResults {
			found = found || strings.Contains(r.Content, "CONFIRM_TIMEOUT")
		}
	}
	if !found {
		t.Errorf("the second model request does not carry CONFIRM_TIMEOUT: %+v", reqs[1].Messages)
	}
	if made, _ := browsertest.Eval[bool](tab, `document.querySelector('#task-list').textContent.includes('never')`); made {
		t.Errorf("the task was created although nobody approved")
	}
}

func TestSidePanelAskUserAndMarkupInResults(t *testing.T) {
	s := start(t, 90*time.Second)
	fake := modeltest.New(t, modeltest.OpenAI)
	fake.SetResponder(func(req modeltest.Request) modeltest.Turn {
		switch req.N {
		case 1:
			return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "call_ask", Name: "ask_user", Arguments: `{"question":"Which colour?","options":["Red","Green","Blue"]}`}}}
		case 2:
			return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "call_task", Name: "create_task", Arguments: `{"subject":"<img src=x onerror=\"window.__pwned=1\">"}`}}}
		}
		return modeltest.Text("Noted.")
	})
	if out, err := ferryIn(t, s.home, "", "provider", "add", "fake", "--kind", modeltest.OpenAI, "--base-url", fake.URL, "--model", "fake-model", "--default"); err != nil {
		t.Fatalf("ferry provider add: %v\n%s", err, out)
	}
	tab := openPanel(t, s)
	s.typeInto(tab, "#input", "Pick a colour")
	s.click(tab, "#send")
	s.waitIn(tab, "question", `document.querySelector('.prompt.ask') !== null`)
	q, _ := browsertest.Eval[string](tab, `document.querySelector('.prompt.ask').innerText`)
	if !strings.Contains(q, "Which colour?") || !strings.Contains(q, "Green") {
		t.Errorf("question card: %q", q)
	}
	// The question does not take the focus; Review, beside the composer, leads to
	// its first option.
	if stole, _ := browsertest.Eval[bool](tab, `document.querySelector('.prompt.ask').contains(document.activeElement)`); stole {
		t.Errorf("the question took the keyboard focus")
	}
	s.click(tab, "#prompt-review")
	focused, _ := browsertest.Eval[string](tab, `document.activeElement?.value ?? ''`)
	if focused != "Red" {
		t.Errorf("after Review the focus is on %q, want the first option", focused)
	}
	s.click(tab, `.prompt.ask label.choice:nth-of-type(2)`)
	s.click(tab, `.prompt.ask button[type=submit]`)
	s.waitIn(tab, "run over", `document.querySelector('#stop').hidden && [...document.querySelectorAll('.msg.assistant')].some(e => e.textContent.includes('Noted.'))`)
	reqs := fake.Requests()
	if len(reqs) < 2 {
		t.Fatalf("the model was asked %d times", len(reqs))
	}
	answer := ""
	for _, m := range reqs[1].Messages {
		for _, r := range m.ToolResults {
			answer += r.Content
		}
	}
	if !strings.Contains(answer, "Green") || strings.Contains(answer, "Red") {
		t.Errorf("the next model request carries %q, want the answer Green", answer)
	}

	// Open every tool card: the markup in the result is text, never an element.
	if _, err := browsertest.Eval[bool](tab, `([...document.querySelectorAll('.tool-card details, details.tool-card')].forEach(d => d.open = true), true)`); err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		"markup shown as text": `[...document.querySelectorAll('.tool-card')].some(c => c.textContent.includes('<img src=x onerror='))`,
		"no img element":       `document.querySelector('#messages img, #task-list img') === null`,
		"no script ran":        `window.__pwned === undefined`,
		"task list as text":    `document.querySelector('#task-list').textContent.includes('<img src=x')`,
	}
	for name, cond := range checks {
		if ok, err := browsertest.Eval[bool](tab, cond); err != nil || !ok {
			dump, _ := browsertest.Eval[string](tab, `document.querySelector('#messages').innerText`)
			t.Errorf("%s: %v (err %v)\n%s", name, ok, err, dump)
		}
	}

	// The diagnostics of the run: three model calls, the tools sent, copyable.
	s.click(tab, "#toggle-diagnostics")
	s.waitIn(tab, "diagnostics", `document.querySelectorAll('#diagnostics-body .model-call').length === 3`)
	diag, _ := browsertest.Eval[string](tab, `document.querySelector('#diagnostics-body').textContent`)
	for _, want := range []string{"ask_user", "create_task", "Which colour?"} {
		if !strings.Contains(diag, want) {
			t.Errorf("diagnostics lack %q: %.400s", want, diag)
		}
	}
	screenshot(t, tab, "sidepanel-diagnostics-en.png")
}

// A card nobody answered in time, as a person meets it, in two languages: while it
// waits it sits above the composer, outside the scrolling transcript; once it timed
// out the transcript keeps what was asked and how it ended, after a reload too;
// Ask again has the model make the same call, a new card comes up, a click
// approves it and the call runs. The panel shows the tokens of the run and of the
// conversation.
func TestSidePanelConfirmationRecordedAndAskedAgain(t *testing.T) {
	for _, l := range []struct{ locale, env, asked, timedOut, approved, again, tokens, budget string }{
		{"en", "en_US", "You were asked: ", "Nobody answered within 2 s", "You approved it.", "Please try create_task again", "Tokens: ", "The run stopped: it used "},
		{"es", "es_ES", "Se te preguntó: ", "Nadie respondió en 2 s", "Lo aprobaste.", "Vuelve a intentar create_task", "Tokens: ", "La ejecución se detuvo: usó "},
	} {
		t.Run(l.locale, func(t *testing.T) {
			s := start(t, 120*time.Second, "LANGUAGE="+l.env, "LANG="+l.env+".UTF-8")
			fake := modeltest.New(t, modeltest.OpenAI)
			fake.SetResponder(func(req modeltest.Request) modeltest.Turn {
				switch req.N {
				case 1:
					return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "call_1", Name: "create_task", Arguments: `{"subject":"Reply to the client"}`}}}
				case 2:
					return modeltest.Text("Nothing was done.")
				case 3:
					return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: "call_2", Name: "create_task", Arguments: `{"subject":"Reply to the client"}`}}}
				case 4:
					return modeltest.Text("Added the task.")
				}
				// A model that never stops calling tools, for the token budget.
				return modeltest.Turn{ToolCalls: []modeltest.Call{{ID: fmt.Sprintf("call_%d", req.N), Name: "list_tasks", Arguments: `{}`}}}
			})
			for _, args := range [][]string{
				{"provider", "add", "fake", "--kind", modeltest.OpenAI, "--base-url", fake.URL, "--model", "fake-model", "--default"},
				{"config", "set", "tools.confirm", "create_task"},
				{"config", "set", "tools.confirm_timeout_seconds", "2"},
			} {
				if out, err := ferryIn(t, s.home, "", args...); err != nil {
					t.Fatalf("ferry %v: %v\n%s", args, err, out)
				}
			}
			tab := openPanel(t, s)
			if lang, _ := browsertest.Eval[string](tab, `document.documentElement.lang`); lang != strings.ReplaceAll(l.locale, "_", "-") {
				t.Skipf("the panel speaks %q, not %s: Chromium lacks the language", lang, l.locale)
			}
			s.typeInto(tab, "#input", "Remind me to reply to the client")
			s.click(tab, "#send")
			s.waitIn(tab, "confirmation card", `document.querySelector('.prompt.confirm') !== null`)
			// Pinned: outside the transcript, in view, above the composer.
			s.waitIn(tab, "card pinned above the composer", `(() => {
				const c = document.querySelector('.prompt.confirm'), r = c.getBoundingClientRect();
				const composer = document.querySelector('#composer').getBoundingClientRect();
				return !document.querySelector('#chat').contains(c) && r.top >= 0 && r.bottom <= composer.top + 1 && r.height > 0;
			})()`)
			record := `[...document.querySelectorAll('.tool-card .confirmation-record')]`
			s.waitIn(tab, "timed-out record in the transcript", record+`.some(r => r.textContent.includes(`+jsString(l.timedOut)+`) && r.textContent.includes(`+jsString(l.asked)+`))`)
			s.waitIn(tab, "run over", `document.querySelector('#stop').hidden && [...document.querySelectorAll('.msg.assistant')].some(e => e.textContent.includes('Nothing was done'))`)
			s.waitIn(tab, "tokens shown", `!document.querySelector('#usage').hidden && document.querySelector('#usage').textContent.startsWith(`+jsString(l.tokens)+`) && /[1-9]/.test(document.querySelector('#usage').textContent)`)

			// A reload, then the conversation from the list: the record is still there.
			if err := chromedp.Do(tab, chromedp.Reload()); err != nil {
				t.Fatal(err)
			}
			s.waitIn(tab, "host connected again", `document.querySelector('#host-status')?.dataset.state === 'connected'`)
			s.click(tab, "#toggle-conversations")
			s.waitIn(tab, "conversation listed", `document.querySelector('#conversation-list .conv-open') !== null`)
			s.click(tab, "#conversation-list .conv-open")
			s.waitIn(tab, "record after the reload", record+`.some(r => r.textContent.includes(`+jsString(l.timedOut)+`))`)
			s.waitIn(tab, "tokens after the reload", `!document.querySelector('#usage').hidden && /[1-9]/.test(document.querySelector('#usage').textContent)`)

			// Ask again: the model is asked to make the call again, and this time the person says yes.
			s.waitIn(tab, "Ask again enabled", `document.querySelector('.ask-again') !== null && !document.querySelector('.ask-again').disabled`)
			s.click(tab, ".ask-again")
			s.waitIn(tab, "the retry message", `[...document.querySelectorAll('.msg.user')].some(e => e.textContent.includes(`+jsString(l.again)+`))`)
			s.waitIn(tab, "a new card", `document.querySelector('.prompt.confirm button.allow') !== null`)
			s.click(tab, ".prompt.confirm button.allow")
			s.waitIn(tab, "approved record", record+`.some(r => r.textContent.includes(`+jsString(l.approved)+`))`)
			s.waitIn(tab, "task made", `document.querySelector('#task-list').textContent.includes('Reply to the client')`)
			s.waitIn(tab, "answer", `[...document.querySelectorAll('.msg.assistant')].some(e => e.textContent.includes('Added the task'))`)
			reqs := fake.Requests()
			if len(reqs) < 3 {
				t.Fatalf("the model was asked %d times, want 4", len(reqs))
			}
			last := reqs[2].Messages[len(reqs[2].Messages)-1]
			if !strings.Contains(last.Text, l.again) {
				t.Errorf("the model's third request ends with %+v, want the retry message", last)
			}

			// A run that reaches its token budget stops, and the panel says so in the
			// person's language, with the setting that raises it.
			// Through the running host, as the options page sets it.
			var set any
			s.must("settings.set", map[string]any{"key": "agent.max_tokens_per_run", "value": "1"}, &set)
			s.waitIn(tab, "run over before the budget run", `document.querySelector('#stop').hidden && !document.querySelector('#send').disabled`)
			s.typeInto(tab, "#input", "Keep going")
			s.click(tab, "#send")
			s.waitIn(tab, "budget notice", `[...document.querySelectorAll('.notice.warn')].some(n => n.textContent.startsWith(`+jsString(l.budget)+`) && n.textContent.includes('agent.max_tokens_per_run'))`)
			if n := len(fake.Requests()); n != 5 {
				t.Errorf("the model was asked %d times, want 5: the budget run stops after its first answer", n)
			}
		})
	}
}
