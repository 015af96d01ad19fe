package toolbox

import (
	"testing"

	"github.com/ferryhq/ferry/host/agent"
	"github.com/ferryhq/ferry/host/browser"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
	"github.com/rs/zerolog"
)

// openToolbox opens the toolbox over a fresh database, closed when the test ends.
func openToolbox(t *testing.T) *Toolbox {
	t.Helper()
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tb, err := Open(db, zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	return tb
}

// The host's own tools compile their schemas on first use (a browser waits for the
// host's first answer); this is where a builtin with a bad schema is caught.
func TestBuiltinSchemasCompile(t *testing.T) {
	all := openToolbox(t).Registry.All(0)
	if len(all) < 20 {
		t.Fatalf("only %d builtin tools registered", len(all))
	}
	for _, l := range all {
		if _, err := tools.NormalizeParameters(l.Parameters); err != nil {
			t.Errorf("%s: %v", l.Name, err)
		}
	}
}

// The sub-agent types over the real builtins: a researcher gets web search,
// web fetch and the page reading tools, all of kind read and none that navigates; a
// page_operator gets every browser tool (tabs, DOM, page interaction) and no web
// or workspace tool; general gets all but ask_user and agent.
func TestSubAgentTypesOverTheBuiltins(t *testing.T) {
	tb := openToolbox(t)
	kinds := map[string]tools.Kind{}
	for _, l := range tb.Registry.All(0) {
		kinds[l.Name] = l.Kind
	}
	researcher, operator := agent.SubAgentTypes["researcher"], agent.SubAgentTypes["page_operator"]
	for name := range researcher.Tools {
		kind, ok := kinds[name]
		if ok && kind != tools.KindRead || name == "open_tab" || name == "browser_navigate" {
			// open_tab is of kind read, but with a tab_id it navigates (a write).
			t.Errorf("the researcher gets %s (%s), which may change something", name, kind)
		}
	}
	for _, name := range []string{"web_search", "web_fetch", "get_tab_content"} {
		if !researcher.Tools[name] {
			t.Errorf("the researcher lacks %s", name)
		}
	}
	if researcher.Pages {
		t.Error("the researcher may call the pages' declared actions, which may write")
	}
	for _, bt := range browser.Tools(browser.Deps{}) {
		if !operator.Tools[bt.Name] {
			t.Errorf("the page_operator lacks the browser tool %s", bt.Name)
		}
	}
	for _, name := range []string{"web_search", "web_fetch", "opfs_write", "opfs_delete", "ask_user", "agent"} {
		if operator.Tools[name] {
			t.Errorf("the page_operator gets %s", name)
		}
	}
	if !operator.Pages || agent.SubAgentTypes["general"].Tools != nil {
		t.Errorf("page_operator pages %v; general %v", operator.Pages, agent.SubAgentTypes["general"].Tools)
	}
}
