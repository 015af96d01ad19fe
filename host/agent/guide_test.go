package agent

import (
	"strings"
	"testing"

	"github.com/ferryhq/ferry/storage"
)

// The words the tools share are in the system prompt once, the same bytes on every
// turn of a run, for a sub-agent too.
func TestToolGuideInThePrompt(t *testing.T) {
	p := &fakeProvider{steps: []step{
		call("echo", `{"text":"one"}`),
		call("agent", `{"prompt":"look it up","type":"researcher"}`),
		say("sub answer"),
		say("done"),
	}}
	e := newEnv(t, p)
	if _, out := e.send("go", ""); out.Status != storage.RunCompleted {
		t.Fatalf("outcome %+v", out)
	}
	reqs := p.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests", len(reqs))
	}
	for i, rq := range reqs {
		if n := strings.Count(rq.System, ToolGuide); n != 1 {
			t.Errorf("request %d carries the tool guide %d times", i, n)
		}
	}
	if reqs[0].System != reqs[1].System || reqs[1].System != reqs[3].System {
		t.Error("the system prompt changed between the turns of one run")
	}
	for _, word := range []string{"tab_id", "ref", "selector", "browser_snapshot", "⟨…⟩", "approval"} {
		if !strings.Contains(ToolGuide, word) {
			t.Errorf("the tool guide does not say what %s is", word)
		}
	}
}
