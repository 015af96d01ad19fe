package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/model/modeltest"
)

// Each answer of the quota tests costs exactly this: the fake's figures.
const (
	quotaIn  = 20
	quotaOut = 30
	worth    = quotaIn + quotaOut
)

func quotaFake(t testing.TB, kind string) *modeltest.Server {
	f := modeltest.New(t, kind)
	f.SetResponder(func(modeltest.Request) modeltest.Turn {
		return modeltest.Turn{Text: "counted", InputTokens: quotaIn, OutputTokens: quotaOut}
	})
	return f
}

type quotaResult struct {
	ok, refused, other atomic.Int64
	retryAfter         atomic.Int64 // the largest seen, seconds
	firstOther         atomic.Value
}

// fire sends n requests at once, spread over the gateways, half of them streamed.
func fire(t *testing.T, gws []*gateway, tok, d string, n int) *quotaResult {
	var res quotaResult
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			g := gws[i%len(gws)]
			body := chatBody(d, model(d), "count me "+strconv.Itoa(i), i%2 == 0, map[string]any{"max_tokens": quotaOut})
			b, _ := json.Marshal(body)
			req, _ := http.NewRequest("POST", g.URL+endpoint(d), strings.NewReader(string(b)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("anthropic-version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				res.other.Add(1)
				res.firstOther.CompareAndSwap(nil, err.Error())
				return
			}
			data := make([]byte, 64<<10)
			n, _ := resp.Body.Read(data)
			for {
				m, err := resp.Body.Read(data[n:])
				n += m
				if err != nil || n == len(data) {
					break
				}
			}
			resp.Body.Close()
			switch resp.StatusCode {
			case 200:
				if strings.Contains(string(data[:n]), `"error"`) || !strings.Contains(string(data[:n]), "fake") {
					res.other.Add(1)
					res.firstOther.CompareAndSwap(nil, string(data[:n]))
					return
				}
				res.ok.Add(1)
			case 429:
				res.refused.Add(1)
				ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
				for {
					cur := res.retryAfter.Load()
					if int64(ra) <= cur || res.retryAfter.CompareAndSwap(cur, int64(ra)) {
						break
					}
				}
			default:
				res.other.Add(1)
				res.firstOther.CompareAndSwap(nil, fmt.Sprintf("%d %s", resp.StatusCode, data[:n]))
			}
		}()
	}
	close(start)
	wg.Wait()
	return &res
}

// untilUsedUp sends requests one by one until the quota refuses one as used up;
// it returns how many were answered.
func untilUsedUp(t *testing.T, gws []*gateway, tok, d string) int {
	t.Helper()
	for n := 0; n < 1000; n++ {
		g := gws[n%len(gws)]
		resp := post(t, g.URL+endpoint(d), tok, d, chatBody(d, model(d), "more", false, map[string]any{"max_tokens": quotaOut}))
		body := readAll(t, resp)
		switch {
		case resp.StatusCode == 200:
		case resp.StatusCode == 429 && strings.Contains(body, "used up"):
			return n
		case resp.StatusCode == 429 && strings.Contains(body, "in flight"):
			time.Sleep(50 * time.Millisecond) // the burst's settlements are being written
		default:
			t.Fatalf("request %d: %d %s", n, resp.StatusCode, body)
		}
	}
	t.Fatal("the quota never ran out")
	return 0
}

// servedTokens sums the tokens the gateway answered for a user, from its usage.
func (e *env) servedTokens(user string) int64 {
	e.t.Helper()
	var rows []struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
		Errors       int64 `json:"errors"`
	}
	out := e.must("", "usage", "--user", user, "--by", "user", "--json")
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		e.t.Fatalf("usage --json: %v %s", err, out)
	}
	var n int64
	for _, r := range rows {
		n += r.InputTokens + r.OutputTokens
	}
	return n
}

// TestConcurrentQuota is the quota's promise end to end: two hundred requests at
// once against one daily token quota never get more than the quota plus one
// request's worth, on SQLite with one gateway and on PostgreSQL with two gateway
// processes sharing it; requests that follow use the quota up to its end and no
// further.
func TestConcurrentQuota(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e := newEnv(t, engine)
			oa := quotaFake(t, modeltest.OpenAI)
			e.must("", "upstream", "add", "oa", "--kind", "openai", "--base-url", oa.URL)
			e.must("", "route", "add", "gpt", "--upstream", "oa")
			const quota = 2000
			tok := e.addUser("q", "--daily-tokens", strconv.Itoa(quota))
			gws := []*gateway{e.serve()}
			if engine == "postgres" {
				gws = append(gws, e.serve())
			}
			load, _ := os.ReadFile("/proc/loadavg")
			started := time.Now()
			res := fire(t, gws, tok, "openai", 200)
			took := time.Since(started)
			if v := res.firstOther.Load(); v != nil {
				t.Fatalf("%d requests neither answered nor refused; first: %v", res.other.Load(), v)
			}
			waitFor(t, "the burst's audit", func() bool { return len(e.requests(200)) >= 200 })
			served := e.servedTokens("q")
			t.Logf("%s, %d gateway(s): 200 at once against %d tokens: %d answered (%d tokens), %d refused (Retry-After ≤ %d s), in %v; load %s",
				engine, len(gws), quota, res.ok.Load(), served, res.refused.Load(), res.retryAfter.Load(), took.Round(time.Millisecond), strings.TrimSpace(string(load)))
			if served > quota+worth || served != res.ok.Load()*worth {
				t.Fatalf("the burst got %d tokens (%d answers) against a quota of %d", served, res.ok.Load(), quota)
			}
			more := untilUsedUp(t, gws, tok, "openai")
			total := e.servedTokens("q")
			t.Logf("then %d more, one by one: %d tokens of %d", more, total, quota)
			if total < quota || total >= quota+worth {
				t.Fatalf("the quota of %d ended at %d tokens: it must be usable to its end and not beyond one request", quota, total)
			}
		})
	}
}

// TestRateLimitsAndTeamQuota: a user's requests a minute are exact, with a
// Retry-After that ends at the minute's turn; a team's daily tokens are shared
// by its members.
func TestRateLimitsAndTeamQuota(t *testing.T) {
	e := newEnv(t, "sqlite")
	oa := quotaFake(t, modeltest.OpenAI)
	an := quotaFake(t, modeltest.Anthropic)
	e.must("", "upstream", "add", "oa", "--kind", "openai", "--base-url", oa.URL)
	e.must("", "upstream", "add", "an", "--kind", "anthropic", "--base-url", an.URL)
	e.must("", "route", "add", "gpt", "--upstream", "oa")
	e.must("", "route", "add", "claude", "--upstream", "an")
	fast := e.addUser("fast", "--rpm", "5")
	e.must("", "team", "set", "small", "--daily-tokens", "200")
	a := e.addUser("amy", "--team", "small")
	b := e.addUser("ben", "--team", "small")
	gw := e.serve()

	for attempt := 0; ; attempt++ {
		minute := time.Now().Unix() / 60
		var ok, limited int
		var ra int
		var body string
		for i := 0; i < 8; i++ {
			d := dialects[i%2]
			resp := post(t, gw.URL+endpoint(d), fast, d, chatBody(d, model(d), "hi", false, nil))
			b := readAll(t, resp)
			switch resp.StatusCode {
			case 200:
				ok++
			case 429:
				limited++
				ra, _ = strconv.Atoi(resp.Header.Get("Retry-After"))
				body = b
			default:
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
		}
		if time.Now().Unix()/60 != minute && attempt == 0 {
			time.Sleep(2 * time.Second) // the minute turned mid-test: once more
			continue
		}
		if ok != 5 || limited != 3 || ra < 1 || ra > 61 || !strings.Contains(body, "5 requests a minute") {
			t.Fatalf("rpm 5: %d answered, %d limited, Retry-After %d: %s", ok, limited, ra, body)
		}
		break
	}

	// The team's 200 tokens a day: 4 answers of 50 between its two members.
	var answered int
	for i := 0; i < 8; i++ {
		tok := []string{a, b}[i%2]
		resp := post(t, gw.URL+"/v1/messages", tok, "anthropic", chatBody("anthropic", "claude", "hi", false, map[string]any{"max_tokens": quotaOut}))
		body := readAll(t, resp)
		if resp.StatusCode == 200 {
			answered++
			continue
		}
		if resp.StatusCode != 429 || !strings.Contains(body, "team") || !strings.Contains(body, "rate_limit_error") {
			t.Fatalf("team quota refusal: %d %s", resp.StatusCode, body)
		}
		if strings.Contains(body, "in flight") {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if answered < 4 || answered > 5 {
		t.Fatalf("team of 200 tokens answered %d requests of %d tokens", answered, worth)
	}
}
