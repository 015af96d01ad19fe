package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ferryhq/ferry/host/markdown"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/host/web"
)

// ContentResult is get_tab_content's result.
type ContentResult struct {
	TabID        int    `json:"tab_id"`
	URL          string `json:"url"`
	Title        string `json:"title"`
	Content      string `json:"content"`
	Truncated    bool   `json:"truncated"`
	UsedSelector string `json:"used_selector"`
	Summarized   bool   `json:"summarized,omitempty"`
	// MainSelector and Note are set when the page's main content was too unclear
	// to cut the page to it: the whole page is the content, MainSelector names the
	// region the choice picked, and Note says why and how to read it alone.
	MainSelector string `json:"main_selector,omitempty"`
	Note         string `json:"note,omitempty"`
	// Dialogs are the JavaScript dialogs the page opened during the capture, as the
	// extension answered them.
	Dialogs json.RawMessage `json:"dialogs,omitempty"`
	// page is what the page itself said (the capture before any summary): a model's
	// summary is no content seen, the page's links are.
	page string
}

// capture is browser.page.capture's result.
type capture struct {
	TabID        int             `json:"tab_id"`
	URL          string          `json:"url"`
	Title        string          `json:"title"`
	HTML         string          `json:"html"`
	UsedSelector string          `json:"used_selector"`
	Frames       json.RawMessage `json:"frames"`
	Dialogs      json.RawMessage `json:"dialogs"`
	HiddenPage   bool            `json:"hidden_page"`
}

// Convert renders a capture's simplified HTML as Markdown with ⟨selector⟩ marks
// (see get_tab_content's description). selector is the one the capture was taken
// with; without one the main content is picked and its selector returned.
func Convert(html, selector string) (md, usedSelector string) {
	c := markdown.ConvertCapture(html, selector)
	return c.Markdown, c.Selector
}

// captureWait covers a capture of a very large page: the DOM walk in the page and
// up to 64 MiB over native messaging.
const captureWait = 60 * time.Second

// The pipeline's bound covers the capture and a model call for prompt.
const contentTimeout = 3 * time.Minute

const contentDescription = "Read a tab's page as rendered (dynamic content, open shadow roots and same-origin frames in; hidden elements out) " +
	"as Markdown; web_fetch makes a new request instead. Without selector, the main content is read (used_selector names it); " +
	"when that pick is unclear the whole page comes back, with main_selector and a note on narrowing. " +
	"A ⟨selector⟩ mark addresses what it ends: a heading line (\"## Pricing ⟨#pricing⟩\"), " +
	"the control, or the link without a target of its own, before it (\"[Buy](#)⟨#buy⟩\"); alone on a line, the region, form or table below."

func (d Deps) getTabContent() tools.Tool {
	return tools.Tool{
		Name:        "get_tab_content",
		Description: contentDescription,
		Parameters: json.RawMessage(`{"type":"object","properties":{
  "tab_id":` + tabIDOptional + `,
  "selector":{"type":"string","minLength":1},
  "prompt":{"type":"string","minLength":1},
  "max_length":{"type":"integer","minimum":1}
},"additionalProperties":false}`),
		Source: tools.SourceBuiltin, Kind: tools.KindRead, Timeout: contentTimeout,
		Available: d.available,
		Class:     tools.ClassRead,
		Effects:   d.effects(nil),
		// The page is read; a summary of it is a model's words, so only the page's own
		// text counts as content seen.
		Provenance: func(call *tools.Call, e tools.Effect, res *tools.Result) tools.Provenance {
			r, ok := res.Result.(*ContentResult)
			if !res.Success || !ok {
				return tools.Provenance{}
			}
			u := r.URL
			if u == "" {
				u = e.TabURL
			}
			return tools.Provenance{Reads: []tools.Read{{URL: orPage(u), Private: true, Untrusted: true, Content: r.page, Base: u}}}
		},
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			var args struct {
				TabID     *int   `json:"tab_id"`
				Selector  string `json:"selector"`
				Prompt    string `json:"prompt"`
				MaxLength *int   `json:"max_length"`
			}
			if err := call.Decode(&args); err != nil {
				return nil, tools.Failf(tools.CodeInvalidParams, "arguments: %v", err)
			}
			if args.Prompt != "" && d.Summarizer == nil {
				return nil, noModel()
			}
			params := map[string]any{}
			if args.TabID != nil {
				params["tab_id"] = *args.TabID
			} else if call.TabID > 0 {
				params["tab_id"] = call.TabID
			}
			if args.Selector != "" {
				params["selector"] = args.Selector
			}
			var c capture
			if err := d.call(ctx, "browser.page.capture", params, &c, captureWait); err != nil {
				return nil, err
			}
			res := &ContentResult{TabID: c.TabID, URL: c.URL, Title: c.Title, Dialogs: c.Dialogs}
			sel := c.UsedSelector
			if sel == "" {
				sel = args.Selector
			}
			cv := markdown.ConvertCapture(c.HTML, sel)
			res.Content, res.UsedSelector = cv.Markdown, cv.Selector
			res.page = cv.Markdown + "\n" + c.Title
			if cv.Main != "" {
				res.MainSelector = cv.Main
				res.Note = fmt.Sprintf("the main content was unclear (%s, the likeliest region, %s), so the whole page is here; pass selector %q to read that region alone", cv.Main, cv.Why, cv.Main)
			}
			if c.HiddenPage {
				res.Note = strings.TrimPrefix(res.Note+"; ", "; ") + "the page hides its whole body from view (visibility: hidden, usually until a script reveals it, which has not happened): this is what its DOM holds, not what a person sees"
			}

			limit := d.settings(ctx).Int(SettingContentMaxLength)
			if args.Prompt != "" {
				in, cut := markdown.TruncateRunes(res.Content, limit)
				sum, err := d.Summarizer.Summarize(ctx, args.Prompt, in)
				if errors.Is(err, web.ErrNoModel) {
					return nil, noModel()
				}
				if err != nil {
					return nil, tools.Failf(tools.CodeHandlerError, "summarising the page through the model: %v", err)
				}
				res.Content, res.Summarized, res.Truncated = sum, true, cut
			}
			if args.MaxLength != nil {
				limit = *args.MaxLength
			}
			var cut bool
			res.Content, cut = markdown.TruncateRunes(res.Content, limit)
			res.Truncated = res.Truncated || cut
			return res, nil
		},
	}
}

func noModel() error {
	return tools.Failf(tools.CodeActionUnavailable,
		"prompt needs a model to summarise with, and no model provider is configured; add one with `ferry provider add ID --kind openai|anthropic --base-url URL --model NAME --api-key-stdin --default`, or call get_tab_content without prompt")
}
