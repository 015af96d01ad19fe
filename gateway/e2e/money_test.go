package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/gateway/store"
	"github.com/ferryhq/ferry/host/model/modeltest"
)

// TestMoney: a price table per upstream model turns each request's tokens into
// what it cost, in the audit, the usage and /metrics; budgets in money, per user
// a day and per team a month, refuse what would spend past them.
func TestMoney(t *testing.T) {
	tm := newTeam(t, "sqlite")
	gen := tm.gw.generation(t)
	tm.must("", "price", "set", "gpt-4o-mini", "--input", "2", "--output", "8")
	spender := tm.addUser("spender", "--daily-budget", "0.02")
	tm.must("", "team", "set", "fin", "--monthly-budget", "0.012")
	member := tm.addUser("member", "--team", "fin")
	tm.gw.waitGeneration(t, gen+4)
	if out := tm.must("", "price", "list"); !strings.Contains(out, "gpt-4o-mini") || !strings.Contains(out, "8.00") {
		t.Fatalf("price list: %s", out)
	}
	// 1,000 tokens in at 2 a million and 500 out at 8 a million: 0.006 each.
	tm.oa.SetResponder(func(modeltest.Request) modeltest.Turn {
		return modeltest.Turn{Text: "priced", InputTokens: 1000, OutputTokens: 500}
	})
	send := func(tok string, i int) (int, string) {
		resp := post(t, tm.gw.URL+endpoint("openai"), tok, "openai", chatBody("openai", "gpt", "spend", i%2 == 0, map[string]any{"max_tokens": 500}))
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 429 && resp.Header.Get("X-Should-Retry") != "false" {
			t.Errorf("a spent budget without X-Should-Retry: false")
		}
		return resp.StatusCode, string(b)
	}
	var codes []int
	for i := 0; i < 5; i++ {
		code, body := send(spender, i)
		codes = append(codes, code)
		if code == 429 && !strings.Contains(body, "daily budget of 0.02 is spent") {
			t.Errorf("refusal: %s", body)
		}
		tm.requests(i+1, "--user", "spender")
	}
	// Admitted while the day's spend is under the budget: the fourth takes it
	// past by at most its own cost.
	if want := []int{200, 200, 200, 200, 429}; !equalInts(codes, want) {
		t.Fatalf("statuses %v, want %v", codes, want)
	}
	for _, r := range tm.requests(5, "--user", "spender") {
		if r.Status == 200 && r.CostMicros != 6000 {
			t.Errorf("a request's cost: %+v", r)
		}
	}
	var usage []store.UsageRow
	json.Unmarshal([]byte(tm.must("", "usage", "--json", "--user", "spender", "--by", "user")), &usage)
	if len(usage) != 1 || usage[0].CostMicros != 24000 {
		t.Fatalf("usage: %+v", usage)
	}
	if c := tm.counter(t, store.UserScope("spender", store.Cost)); c.Used != 24000 || c.Reserved != 0 {
		t.Fatalf("the day's spend counter: %+v", c)
	}

	codes = nil
	for i := 0; i < 3; i++ {
		code, body := send(member, i)
		codes = append(codes, code)
		if code == 429 && !strings.Contains(body, "team's monthly budget of 0.01") {
			t.Errorf("team refusal: %s", body)
		}
		tm.requests(i+1, "--user", "member")
	}
	if want := []int{200, 200, 429}; !equalInts(codes, want) {
		t.Fatalf("team statuses %v, want %v", codes, want)
	}

	resp, err := http.Get(tm.gw.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), `ferry_gateway_spend_micros_total{model="gpt"} 36000`) {
		t.Fatalf("metrics: %s", grepLines(string(m), "spend"))
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
