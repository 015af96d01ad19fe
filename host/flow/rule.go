package flow

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/ferryhq/ferry/host/origins"
	"github.com/ferryhq/ferry/host/tools"
)

// Source and destination names the rule uses beside origins (tools declares them).
const (
	SourceWorkspace = tools.SourceWorkspace
	SourceOtherTabs = tools.SourceOtherTabs
	SourceAnswers   = tools.SourceAnswers
	SourceSearch    = tools.SourceSearch
	DestSearch      = tools.DestSearch
	// SourceLocalFiles is the origin of file:// pages on this machine.
	SourceLocalFiles = "file://"
)

// unknownPage stands for a page whose origin could not be looked up: never
// designated, so the rule asks.
const unknownPage = tools.PageUnknown

func orUnknown(origin string) string {
	if origin == "" {
		return unknownPage
	}
	return origin
}

// pageScope is what a page's own run may reach (ferry.ask): its tab and the tabs its
// conversation opened, never the person's other tabs.
func (st *State) pageScope(s *tools.Scope, e tools.Effect) *tools.Failure {
	if s == nil || s.Principal != tools.PrincipalPage || s.OwnTab == 0 {
		return nil
	}
	if e.OtherTabs || (e.Tab != 0 && e.Tab != s.OwnTab && !st.Tabs[e.Tab]) {
		return tools.Failf(tools.CodePermissionDenied, "a run that %s started with ferry.ask reads only its own tab and the tabs it opened: the person's other tabs are not the page's to see", origins.Display(s.Origin))
	}
	return nil
}

// destinations is where one send goes: the origin of its URL and of every absolute
// URL inside that URL's query or fragment (what an open redirect forwards to), or
// the destination it names.
func destinations(s tools.Send) []string {
	if s.URL == "" {
		switch {
		case s.To == "":
			return nil
		case strings.Contains(s.To, ":"):
			// A page or an action named by its address: where that address leads.
			if d := destination(s.To); d != "" {
				return []string{d}
			}
			return nil
		}
		return []string{s.To}
	}
	out := []string{}
	add := func(d string) {
		for _, x := range out {
			if x == d {
				return
			}
		}
		out = append(out, d)
	}
	var walk func(raw string, depth int)
	walk = func(raw string, depth int) {
		if d := destination(raw); d != "" {
			add(d)
		}
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || depth > 3 {
			return
		}
		var inner []string
		for _, vs := range u.Query() {
			inner = append(inner, vs...)
		}
		if f, err := url.QueryUnescape(u.Fragment); err == nil {
			inner = append(inner, f)
		}
		for _, v := range inner {
			for _, m := range urlRe.FindAllString(v, -1) {
				walk(trimURL(m), depth+1)
			}
		}
	}
	walk(s.URL, 0)
	return out
}

// clean reports whether everything a send carries is already free to go: the person's
// own words, and a URL that occurs verbatim in content no model wrote (following a
// link carries no new data).
func (st *State) clean(s tools.Send) bool {
	if s.URL != "" && !st.seen(s.URL) && !st.said(s.URL) && !st.picked(s.URL) {
		return false
	}
	for _, p := range s.Carries {
		if !st.said(p) && !st.picked(p) {
			return false
		}
	}
	return true
}

// verdict is the rule. Nothing asks while the context holds only the person's own
// words: whatever the model does then, it does for them. Once untrusted content is
// in, a person approves the exact call that would
//   - change a page of an origin outside the designated set,
//   - delete or overwrite what the conversation did not create (files, tabs), or
//   - carry data that is not the person's own words or a URL already seen to any
//     destination, while the context holds private data — the destination's own
//     too, unless the destination itself started the run: the sites that relay
//     (mail, forums, shared documents) are the ones that carry injections.
func (st *State) verdict(e tools.Effect, tool, starter string) tools.FlowVerdict {
	if !st.untrusted() {
		return tools.FlowVerdict{}
	}
	var why []string
	var flow *tools.Flow
	for _, c := range e.Changes {
		o := OriginOf(c)
		if o == "" {
			o = c
		}
		if !st.designated(o) {
			why = append(why, fmt.Sprintf("%s would change a page of %s, which you did not name for this task", tool, origins.Display(o)))
		}
	}
	for _, a := range e.Destroys {
		if !st.mayDestroy(a) {
			why = append(why, tool+" "+a.What)
		}
	}
	for _, s := range e.Sends {
		if st.clean(s) {
			continue
		}
		for _, d := range destinations(s) {
			priv := st.privateFor(d, starter)
			if len(priv) == 0 {
				continue
			}
			shown := make([]string, len(priv))
			for i, p := range priv {
				shown[i] = origins.Display(p)
			}
			if flow == nil {
				flow = &tools.Flow{Sources: shown, Destination: origins.Display(d)}
			}
			why = append(why, fmt.Sprintf("%s would send data to %s while this conversation holds data from %s, and content it read (which may carry someone else's instructions) could have asked for it",
				tool, origins.Display(d), strings.Join(shown, ", ")))
		}
	}
	if len(why) == 0 {
		return tools.FlowVerdict{}
	}
	return tools.FlowVerdict{Confirm: true, Flow: flow, Reason: strings.Join(why, "; ") + "."}
}

// mayDestroy reports whether the conversation made the artefact, or (a file) the
// person named it.
func (st *State) mayDestroy(a tools.Artefact) bool {
	switch a.Kind {
	case tools.ArtefactFile:
		return st.Created[a.ID] || st.Named[a.ID]
	case tools.ArtefactTab:
		var id int
		if _, err := fmt.Sscan(a.ID, &id); err != nil {
			return false
		}
		return st.Tabs[id]
	}
	return false
}
