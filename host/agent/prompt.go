package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/ferryhq/ferry/host/tools"
)

const builtinPrompt = `You are Ferry, an agent that carries out tasks for the user on the web and in their browser. You act by calling the tools you are offered; the host runs every call and answers with JSON: {"success": true, "result": …} or {"success": false, "code": "…", "reason": "…"}.

Read a failure's code before you act on it:
- INVALID_PARAMS, NOT_FOUND: fix the call (the reason says what is wrong); nothing ran.
- ACTION_UNAVAILABLE, PERMISSION_DENIED: nothing ran; the reason says what is missing. Do not retry unchanged.
- USER_REJECTED, CONFIRM_TIMEOUT: the user declined; respect that and do not try another route to the same effect.
- LOOP_DETECTED, RATE_LIMITED: you are repeating yourself or going too fast; change approach.
- HANDLER_ERROR, TIMEOUT, EXPECTATION_FAILED: the call may have had effects; check the state before retrying.

For a job of several steps, keep a task list with create_task and update_task, and mark each task as you finish it. Prefer a page's own declared actions over imitating clicks. Never invent results you did not observe; say what you could not do. When the job is done, answer the user directly and concisely, in the language they wrote in.`

// ToolGuide says once what many tools share, so that their definitions, sent with
// every request, need not each say it. `ferry mcp` gives it to outside agents as
// its instructions. It is the same bytes on every turn (providers cache the prompt).
const ToolGuide = `# How the tools work

- tab_id is a tab's id from list_tabs. Left out, it is the tab this conversation or session is bound to, else the active tab.
- An element is given by ref or by selector, not both: a ref (e12) from the tab's latest browser_snapshot (after the page changes, take a new one), or a CSS selector, such as a ⟨…⟩ mark of get_tab_content.
- prompt (web_fetch, get_tab_content): the model summarises the content following it. max_length cuts the content; truncated says so.
- Workspace paths (opfs_*) are relative to its root, /-separated, case-sensitive; folders exist through their files. A write keeps the old content as a version, so it can be undone.
- Tasks belong to this conversation (outside one, to the conversation "default").
- The person's settings decide which calls wait for their approval (writes, page scripts on sites they did not allow, file:// and private addresses) and what is off (navigating a tab that is open already); web_fetch refuses private addresses.`

const noBrowser = `No browser is connected to this session: the tools that act on tabs and pages are not available. Work with the host's own tools (web search, web fetch, the workspace, the task list), and say so if the job needs a browser.`

// system builds the system prompt of one turn: the built-in text, what this run is
// (a sub-agent's role), the user's own instructions, and the bound page.
func (r *Run) system(ctx context.Context) string {
	var b strings.Builder
	b.WriteString(builtinPrompt)
	b.WriteString("\n\n" + ToolGuide)
	if r.m.opts.Browser == nil || !r.m.opts.Browser() {
		b.WriteString("\n\n")
		b.WriteString(noBrowser)
	}
	if r.extra != "" {
		b.WriteString("\n\n")
		b.WriteString(r.extra)
	}
	if own := strings.TrimSpace(r.m.opts.Settings.Snapshot(ctx).String(SettingSystemPrompt)); own != "" {
		b.WriteString("\n\n# The user's own instructions\n\n")
		b.WriteString(own)
	}
	if r.tabID != 0 && r.m.opts.Page != nil {
		if p, err := r.m.opts.Page.PageContext(ctx, r.tabID); err != nil {
			r.m.log.Warn().Err(err).Int("tab", r.tabID).Msg("page context")
		} else if p != nil {
			writePage(&b, r.tabID, p)
		}
	}
	fmt.Fprintf(&b, "\n\nToday is %s.", r.m.db.Now().Format("Monday, 2 January 2006"))
	return b.String()
}

func writePage(b *strings.Builder, tab int, p *tools.PageView) {
	fmt.Fprintf(b, "\n\n# The page (tab %d)\n", tab)
	if p.Title != "" || p.URL != "" {
		fmt.Fprintf(b, "\n%s %s\n", p.Title, p.URL)
	}
	if len(p.Actions) > 0 {
		fmt.Fprintf(b, "\nActions the page declares and allows now: %s.\n", strings.Join(p.Actions, ", "))
	}
	if len(p.Unavailable) > 0 {
		b.WriteString("\nActions the page declares that are not available now:\n")
		for _, u := range p.Unavailable {
			fmt.Fprintf(b, "- %s: %s\n", u.Name, u.Reason)
		}
	}
	if len(p.Records) > 0 {
		b.WriteString("\nWhat the page recorded:\n")
		for _, rec := range p.Records {
			fmt.Fprintf(b, "- %s\n", rec)
		}
	}
}
