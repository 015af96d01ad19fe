package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferryhq/ferry/gateway/store"
	"github.com/ferryhq/ferry/gateway/store/storetest"
	"github.com/ferryhq/ferry/host/model/modeltest"
)

// TestSetHonoursDB: user set and team set act on the database --db names, not
// on the default one (which they must neither change nor create).
func TestSetHonoursDB(t *testing.T) {
	e := newEnv(t, "sqlite")
	other := filepath.Join(t.TempDir(), "other.db")
	e.must("", "user", "add", "carol", "--db", other)
	e.must("", "user", "set", "carol", "--daily-tokens", "77", "--team", "ops", "--db", other)
	e.must("", "team", "set", "ops", "--rpm", "9", "--db", other)

	var users []store.User
	json.Unmarshal([]byte(e.must("", "user", "list", "--json", "--db", other)), &users)
	if len(users) != 1 || users[0].DailyTokens != 77 || users[0].Team != "ops" {
		t.Fatalf("user set --db: %+v", users)
	}
	var teams []store.Team
	json.Unmarshal([]byte(e.must("", "team", "list", "--json", "--db", other)), &teams)
	if len(teams) != 1 || teams[0].RPM != 9 {
		t.Fatalf("team set --db: %+v", teams)
	}
	if _, err := os.Stat(e.dsn); !os.IsNotExist(err) {
		t.Fatalf("the default database %s was touched: %v", e.dsn, err)
	}
	// Against the default database, which has no carol, user set fails.
	if _, errs, code := e.ferry("", "user", "set", "carol", "--rpm", "1"); code == 0 || !strings.Contains(errs, "carol") {
		t.Fatalf("user set on the default database: exit %d %s", code, errs)
	}
}

// counter reads a quota counter of today straight from the database.
func (e *env) counter(t *testing.T, scope string) store.Counter {
	t.Helper()
	st, err := store.Open(context.Background(), e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := st.Counter(context.Background(), scope, store.Day(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// slowStreams opens n streams of user tok that run for a long time, and
// returns once each has sent its first event.
func slowStreams(t *testing.T, g *gateway, tok string, n int) []*bufio.Reader {
	t.Helper()
	var out []*bufio.Reader
	for i := 0; i < n; i++ {
		resp := post(t, g.URL+endpoint("openai"), tok, "openai", chatBody("openai", "gpt", fmt.Sprintf("stream %d %s", i, strings.Repeat("prompt ", 100)), true, nil))
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d: %d %s", i, resp.StatusCode, readAll(t, resp))
		}
		t.Cleanup(func() { resp.Body.Close() })
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		out = append(out, br)
	}
	return out
}

// TestKillWithStreamsInFlight: kill -9 with three streams open loses neither
// their usage nor their audit: the next start settles them with their
// estimate at once, so the user's quota is not held by them a moment longer.
func TestKillWithStreamsInFlight(t *testing.T) {
	tm := newTeam(t, "sqlite")
	gen := tm.gw.generation(t)
	q := tm.addUser("quinn", "--daily-tokens", "10000")
	tm.oa.SetResponder(func(modeltest.Request) modeltest.Turn {
		return modeltest.Turn{Text: strings.Repeat("long words ", 400), ChunkDelay: 50 * time.Millisecond}
	})
	tm.gw.waitGeneration(t, gen+1)
	slowStreams(t, tm.gw, q, 3)
	scope := store.UserScope("quinn", store.Tokens)
	if c := tm.counter(t, scope); c.Reserved == 0 {
		t.Fatalf("nothing held during the streams: %+v", c)
	}
	if err := tm.gw.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	tm.gw.cmd.Wait()
	if rows := tm.requests(0); len(rows) != 0 {
		t.Fatalf("rows before the restart: %+v", rows)
	}

	// Another process, which does not share the dead one's spool, tells the
	// truth about when the held quota frees, once the dead one has missed a
	// beat: when the sweep releases it.
	killed := time.Now()
	other := tm.serve("--spool", t.TempDir())
	time.Sleep(time.Until(killed.Add(16 * time.Second)))
	resp := post(t, other.URL+endpoint("openai"), q, "openai", chatBody("openai", "gpt", "held", false, nil))
	body := readAll(t, resp)
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || !strings.Contains(body, "stopped") || ra < 5 || ra > 30 {
		t.Fatalf("with the quota held by a killed process: %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}

	g := tm.serve()
	var rows []store.Request
	for _, r := range tm.requests(4) {
		if r.Status != 429 {
			rows = append(rows, r)
		}
	}
	if len(rows) != 3 {
		t.Fatalf("after the restart %d of 3 streams are audited", len(rows))
	}
	var sum int64
	for _, r := range rows {
		if r.User != "quinn" || r.Status != 502 || !r.Estimated || r.InputTokens < 100 {
			t.Errorf("a killed stream's row: %+v", r)
		}
		sum += r.InputTokens + r.OutputTokens
	}
	c := tm.counter(t, scope)
	if c.Reserved != 0 || c.Used != sum {
		t.Fatalf("after the restart the counter is %+v; want 0 reserved and %d used", c, sum)
	}
	// Not locked out: the next request is served at once.
	tm.oa.SetResponder(func(modeltest.Request) modeltest.Turn { return modeltest.Turn{Text: "back"} })
	resp = post(t, g.URL+endpoint("openai"), q, "openai", chatBody("openai", "gpt", "again", false, nil))
	if body := readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("after the restart: %d %s", resp.StatusCode, body)
	}
}

// TestSIGTERMDrainsWithinGrace: SIGTERM lets streams run for --grace, then ends
// them with the dialect's error event and settles them before the process
// leaves; nothing in flight is lost.
func TestSIGTERMDrainsWithinGrace(t *testing.T) {
	e := newEnv(t, "sqlite")
	oa := modeltest.NewOpenAI(t)
	oa.SetResponder(func(modeltest.Request) modeltest.Turn {
		return modeltest.Turn{Text: strings.Repeat("long words ", 400), ChunkDelay: 50 * time.Millisecond}
	})
	e.must("k\n", "upstream", "add", "oa", "--kind", "openai", "--base-url", oa.URL, "--api-key-stdin")
	e.must("", "route", "add", "gpt", "--upstream", "oa")
	tok := e.addUser("sam", "--daily-tokens", "50000")
	g := e.serve("--grace", "1s")
	streams := slowStreams(t, g, tok, 3)
	start := time.Now()
	g.cmd.Process.Signal(syscall.SIGTERM)
	for i, br := range streams {
		rest, _ := io.ReadAll(br)
		if !strings.Contains(string(rest), `"error"`) || !strings.Contains(string(rest), "restarting") {
			t.Errorf("stream %d ended without the error event: …%s", i, clipEnd(string(rest), 300))
		}
	}
	g.cmd.Wait()
	took := time.Since(start)
	if took > 6*time.Second || took < time.Second {
		t.Fatalf("stopped %v after SIGTERM with a grace of 1s", took)
	}
	rows := e.requests(3)
	if len(rows) != 3 {
		t.Fatalf("%d of 3 drained streams audited", len(rows))
	}
	for _, r := range rows {
		if r.Status != 503 || r.OutputTokens == 0 || r.InputTokens == 0 {
			t.Errorf("a drained stream's row: %+v", r)
		}
	}
	if c := e.counter(t, store.UserScope("sam", store.Tokens)); c.Reserved != 0 {
		t.Fatalf("held after the drain: %+v", c)
	}
	// A clean stop leaves no journal behind.
	if left, _ := filepath.Glob(filepath.Join(e.dsn+".spool", "*.journal")); len(left) != 0 {
		t.Fatalf("journals left after a clean stop: %v", left)
	}
}

func clipEnd(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// TestHangUpBeforeFirstByte: a client that leaves before the first byte is
// charged the prompt the vendor already had.
func TestHangUpBeforeFirstByte(t *testing.T) {
	tm := newTeam(t, "sqlite")
	for _, d := range dialects {
		tm.fake(d).Add(modeltest.Turn{Text: "late", Delay: 3 * time.Second})
		b, _ := json.Marshal(chatBody(d, model(d), strings.Repeat("a long prompt ", 200), true, nil))
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, "POST", tm.gw.URL+endpoint(d), bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+tm.tok)
		req.Header.Set("x-api-key", tm.tok)
		req.Header.Set("anthropic-version", "2023-06-01")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("%s: answered %d before the delay", d, resp.StatusCode)
		}
		cancel()
	}
	rows := tm.requests(2)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r.Status != 499 || !r.Estimated || r.InputTokens < 2800/4 {
			t.Errorf("a client that left before the first byte was charged %d: %+v", r.InputTokens, r)
		}
	}
}

// cutter passes TCP connections on to a database until it is cut: then every
// connection open is closed and new ones are hung up at once, as when the
// database's machine goes away.
type cutter struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
}

func newCutter(t *testing.T, target string) *cutter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); c.setCut(true) })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			if c.cut {
				c.mu.Unlock()
				in.Close()
				continue
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				c.mu.Unlock()
				in.Close()
				continue
			}
			c.conns[in], c.conns[out] = true, true
			c.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return c
}

func (c *cutter) setCut(v bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = v
	if v {
		for k := range c.conns {
			k.Close()
		}
		c.conns = map[net.Conn]bool{}
	}
}

// TestDatabaseOutage: PostgreSQL unreachable for longer than the old retries
// lasted. Users without a quota are served and metered into the spool; users
// with one are refused at once with a Retry-After (their quota cannot be
// checked), never left waiting; a stream that held quota when the database went
// settles. When the database is back, every row is there and nothing is held.
func TestDatabaseOutage(t *testing.T) {
	dsn := storetest.Postgres(t)
	u, _ := url.Parse(dsn)
	cut := newCutter(t, u.Host)
	u.Host = cut.ln.Addr().String()
	e := &env{t: t, dsn: dsn, home: t.TempDir()}
	oa := modeltest.NewOpenAI(t)
	oa.SetResponder(func(r modeltest.Request) modeltest.Turn {
		if strings.Contains(string(r.Body), "slow") {
			return modeltest.Turn{Text: strings.Repeat("slow words ", 60), ChunkDelay: 50 * time.Millisecond, InputTokens: 10, OutputTokens: 100}
		}
		return modeltest.Turn{Text: "fine", InputTokens: 10, OutputTokens: 5}
	})
	e.must("k\n", "upstream", "add", "oa", "--kind", "openai", "--base-url", oa.URL, "--api-key-stdin")
	e.must("", "route", "add", "gpt", "--upstream", "oa")
	free := e.addUser("free")
	capped := e.addUser("capped", "--daily-tokens", "100000")
	served := &env{t: t, dsn: u.String(), home: e.home}
	g := served.serve("--spool", t.TempDir())

	// A stream holding quota is under way when the database goes.
	resp := post(t, g.URL+endpoint("openai"), capped, "openai", chatBody("openai", "gpt", "slow", true, nil))
	br := bufio.NewReader(resp.Body)
	br.ReadString('\n')
	cut.setCut(true)
	io.ReadAll(br)
	resp.Body.Close()

	const n = 40
	outage := time.Now()
	for i := 0; i < n; i++ {
		resp := post(t, g.URL+endpoint("openai"), free, "openai", chatBody("openai", "gpt", fmt.Sprintf("during %d", i), i%2 == 0, nil))
		if body := readAll(t, resp); resp.StatusCode != 200 {
			t.Fatalf("a user without a quota during the outage: %d %s", resp.StatusCode, body)
		}
	}
	t0 := time.Now()
	resp = post(t, g.URL+endpoint("openai"), capped, "openai", chatBody("openai", "gpt", "refused", false, nil))
	body := readAll(t, resp)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || time.Since(t0) > 3*time.Second {
		t.Fatalf("a user with a quota during the outage: %d after %v, Retry-After %q: %s", resp.StatusCode, time.Since(t0), resp.Header.Get("Retry-After"), body)
	}
	// Longer than the ten retries (11 s) that used to drop settlements.
	time.Sleep(time.Until(outage.Add(15 * time.Second)))
	cut.setCut(false)

	rows := e.requests(n + 2)
	if len(rows) != n+2 {
		t.Fatalf("after the outage %d of %d requests are audited", len(rows), n+2)
	}
	var used int64
	for _, r := range rows {
		if r.User == "free" {
			used += r.InputTokens + r.OutputTokens
		}
	}
	if used != n*15 {
		t.Fatalf("the user without a quota was charged %d; want %d", used, n*15)
	}
	c := e.counter(t, store.UserScope("capped", store.Tokens))
	if c.Reserved != 0 || c.Used != 110 {
		t.Fatalf("the stream's hold after the outage: %+v; want 0 reserved and 110 used", c)
	}
}

// TestDiskFull: the database and its spool on a disk that fills up. No request
// is served that is not metered: while nothing can be written they are refused
// with a Retry-After, and once there is room again every one served is audited.
func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	// A small disk of its own: needs the right to mount (root on Linux).
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small disk here (%v: %s); TestJournalFullRefuses covers the logic", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	e := &env{t: t, dsn: filepath.Join(dir, "gw.db"), home: t.TempDir()}
	oa := modeltest.NewOpenAI(t)
	oa.SetResponder(func(modeltest.Request) modeltest.Turn {
		return modeltest.Turn{Text: "fine", InputTokens: 10, OutputTokens: 5}
	})
	e.must("k\n", "upstream", "add", "oa", "--kind", "openai", "--base-url", oa.URL, "--api-key-stdin")
	e.must("", "route", "add", "gpt", "--upstream", "oa")
	tok := e.addUser("free")
	g := e.serve()
	resp := post(t, g.URL+endpoint("openai"), tok, "openai", chatBody("openai", "gpt", "before", false, nil))
	readAll(t, resp)
	e.requests(1)

	filler := filepath.Join(dir, "filler")
	f, _ := os.Create(filler)
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	served, refused := 0, 0
	for i := 0; i < 60; i++ {
		resp := post(t, g.URL+endpoint("openai"), tok, "openai", chatBody("openai", "gpt", fmt.Sprintf("full %d %s", i, strings.Repeat("x", 2000)), false, nil))
		body := readAll(t, resp)
		switch resp.StatusCode {
		case 200:
			served++
		case 503:
			if resp.Header.Get("Retry-After") == "" {
				t.Fatalf("refused without Retry-After: %s", body)
			}
			refused++
		default:
			t.Fatalf("disk full: %d %s", resp.StatusCode, body)
		}
	}
	if refused == 0 {
		t.Fatalf("served all %d requests with the disk full", served)
	}
	os.Remove(filler)
	resp = post(t, g.URL+endpoint("openai"), tok, "openai", chatBody("openai", "gpt", "after", false, nil))
	if body := readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("with room again: %d %s", resp.StatusCode, body)
	}
	rows := e.requests(served + 2 + refused)
	ok := 0
	for _, r := range rows {
		if r.Status == 200 {
			ok++
		}
	}
	t.Logf("disk full: %d served, %d refused; %d audited", served, refused, len(rows))
	if ok != served+2 {
		t.Fatalf("%d requests served, %d audited as served", served+2, ok)
	}
}

// TestStreamCutMidEvent: an upstream whose connection drops inside an event.
// The official openai SDK gets the whole events, then the gateway's error
// event, which it raises as its APIError (not a SyntaxError from half a JSON).
func TestStreamCutMidEvent(t *testing.T) {
	modules := sdkModules(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(s string) string {
			return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}]}` + "\n\n"
		}
		io.WriteString(w, chunk("Hello ")+chunk("world")+`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hal`)
		// The response ends there, as when a proxy on the way gives up: the
		// client of the gateway must not get the half event.
	}))
	defer up.Close()
	e := newEnv(t, "sqlite")
	e.must("k\n", "upstream", "add", "cutter", "--kind", "openai", "--base-url", up.URL, "--api-key-stdin")
	e.must("", "route", "add", "cut", "--upstream", "cutter")
	tok := e.addUser("cara")
	g := e.serve()
	drv := startSDKDriver(t, modules)
	r := drv.do(t, "openai", "chat", map[string]any{"token": tok, "base_url": g.URL, "max_retries": 0,
		"params": map[string]any{"model": "cut", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}})
	if r.Error == nil || r.Error.Class == "SyntaxError" || !r.Error.APIError || !strings.Contains(r.Error.Message, "broke before its end") {
		t.Fatalf("the SDK on a cut stream: %+v", r.Error)
	}
	if r.Partial.Text != "Hello world" {
		t.Fatalf("the SDK read %q before the cut", r.Partial.Text)
	}
	rows := e.requests(1)
	if len(rows) != 1 || rows[0].Status != 502 || !rows[0].Estimated || rows[0].OutputTokens == 0 {
		t.Fatalf("the cut stream's row: %+v", rows)
	}
}

// TestUpstreamTimeouts: a stalled upstream is given up after the first-byte and
// idle timeouts, not after minutes: before its first event the next upstream is
// tried, after it the stream ends with the dialect's timeout event.
func TestUpstreamTimeouts(t *testing.T) {
	tm := newTeam(t, "sqlite")
	gen := tm.gw.generation(t)
	tm.must("", "config", "set", "upstream.first_byte_timeout_s", "1")
	tm.must("", "config", "set", "upstream.idle_timeout_s", "1")
	tm.gw.waitGeneration(t, gen+2)

	tm.oa.Add(modeltest.Turn{Text: "late", Delay: 4 * time.Second})
	start := time.Now()
	resp := post(t, tm.gw.URL+endpoint("openai"), tm.tok, "openai", chatBody("openai", "gpt", "hi", true, nil))
	body := readAll(t, resp)
	// The fake would answer at 4 s: a 504 before then is the timeout's.
	if took := time.Since(start); resp.StatusCode != 504 || !strings.Contains(body, "first_byte_timeout_s") || took > 3900*time.Millisecond {
		t.Fatalf("no first event: %d after %v: %s", resp.StatusCode, took, body)
	}

	tm.an.Add(modeltest.Turn{Text: "one two three four five six", ChunkDelay: 3 * time.Second})
	start = time.Now()
	resp = post(t, tm.gw.URL+endpoint("anthropic"), tm.tok, "anthropic", chatBody("anthropic", "claude", "hi", true, nil))
	evs := readSSE(t, resp)
	last := evs[len(evs)-1]
	// Six pieces 3 s apart would take 18 s: an end well before is the timeout's.
	if took := time.Since(start); last.Name != "error" || !strings.Contains(last.Data, "idle_timeout_s") || took > 10*time.Second {
		t.Fatalf("a stalled stream: last event %+v after %v", last, took)
	}
}

// TestVendorLimitFromQuota: an OpenAI stream that names no max_tokens, from a
// model that bills reasoning the stream never shows, cannot take a user past
// the quota: the vendor is given the quota's room as its own limit (shared by
// n answers), and the final usage is what is charged.
func TestVendorLimitFromQuota(t *testing.T) {
	tm := newTeam(t, "sqlite")
	gen := tm.gw.generation(t)
	tok := tm.addUser("rea", "--daily-tokens", "10000")
	tm.gw.waitGeneration(t, gen+1)
	var mu sync.Mutex
	var limits []int64
	tm.oa.SetResponder(func(r modeltest.Request) modeltest.Turn {
		var b struct {
			MaxCompletionTokens int64 `json:"max_completion_tokens"`
			MaxTokens           int64 `json:"max_tokens"`
			N                   int64 `json:"n"`
		}
		json.Unmarshal(r.Body, &b)
		lim := max(b.MaxCompletionTokens, b.MaxTokens)
		mu.Lock()
		limits = append(limits, lim*max(b.N, 1))
		mu.Unlock()
		// Thinks up to its limit (or 30,000 tokens without one), shows little.
		out := int64(30000)
		if lim > 0 {
			out = min(out, lim*max(b.N, 1))
		}
		return modeltest.Turn{Text: "short", InputTokens: 20, OutputTokens: int(out)}
	})
	scope := store.UserScope("rea", store.Tokens)
	for i, n := range []int{3, 1, 1} {
		resp := post(t, tm.gw.URL+endpoint("openai"), tok, "openai", chatBody("openai", "gpt", "think hard", true, map[string]any{"n": n}))
		body := readAll(t, resp)
		t.Logf("request %d (n=%d): %d", i, n, resp.StatusCode)
		if i == 0 && resp.StatusCode != 200 {
			t.Fatalf("the first request: %d %s", resp.StatusCode, body)
		}
		waitFor(t, "the settlement", func() bool { return tm.counter(t, scope).Reserved == 0 })
	}
	c := tm.counter(t, scope)
	// Only the last request's prompt (20 tokens) may go past: no limit bounds
	// a prompt.
	if c.Used > 10000+20 {
		t.Fatalf("a 10,000-token quota reached %d (vendor limits %v)", c.Used, limits)
	}
	if len(limits) == 0 || limits[0] == 0 || limits[0] > 10000 {
		t.Fatalf("the vendor's limits: %v", limits)
	}
}

// peakRSS is the most memory the process has held (Linux).
func peakRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// TestLargeBodiesBounded: twelve 30 MiB bodies at once from one token. The
// user's concurrency cap refuses those past it with 429 before their body is
// read, and the process's memory stays far below what reading them all takes.
func TestLargeBodiesBounded(t *testing.T) {
	tm := newTeam(t, "sqlite")
	gen := tm.gw.generation(t)
	tm.must("", "config", "set", "limits.user_concurrency", "3")
	tm.gw.waitGeneration(t, gen+1)
	tm.oa.SetResponder(func(modeltest.Request) modeltest.Turn { return modeltest.Turn{Text: "ok", Delay: 2 * time.Second} })
	big, _ := json.Marshal(chatBody("openai", "gpt", strings.Repeat("a", 30<<20), false, nil))
	before := peakRSS(t, tm.gw.cmd.Process.Pid)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", tm.gw.URL+"/v1/chat/completions", bytes.NewReader(big))
			req.Header.Set("Authorization", "Bearer "+tm.tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				mu.Lock()
				codes[-1]++
				mu.Unlock()
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			codes[resp.StatusCode]++
			if resp.StatusCode == 429 && resp.Header.Get("Retry-After") == "" {
				codes[-2]++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	peak := peakRSS(t, tm.gw.cmd.Process.Pid)
	t.Logf("statuses %v; peak memory %d MiB (before: %d MiB)", codes, peak>>20, before>>20)
	if codes[200] < 3 || codes[429] < 6 || codes[-2] > 0 || codes[200]+codes[429] != 12 {
		t.Fatalf("statuses %v", codes)
	}
	if peak > 500<<20 {
		t.Fatalf("peak memory %d MiB for 12 bodies of 30 MiB with a cap of 3", peak>>20)
	}
}

// TestKilledBesideAnother: two processes on one machine share the spool
// folder; when one is killed with streams in flight, the other settles them
// within seconds, without a restart.
func TestKilledBesideAnother(t *testing.T) {
	e := newEnv(t, "sqlite")
	oa := modeltest.NewOpenAI(t)
	oa.SetResponder(func(modeltest.Request) modeltest.Turn {
		return modeltest.Turn{Text: strings.Repeat("long words ", 400), ChunkDelay: 50 * time.Millisecond}
	})
	e.must("k\n", "upstream", "add", "oa", "--kind", "openai", "--base-url", oa.URL, "--api-key-stdin")
	e.must("", "route", "add", "gpt", "--upstream", "oa")
	tok := e.addUser("kim", "--daily-tokens", "50000")
	a := e.serve()
	e.serve()
	slowStreams(t, a, tok, 2)
	killed := time.Now()
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.cmd.Wait()
	rows := e.requests(2)
	if len(rows) != 2 || time.Since(killed) > 12*time.Second {
		t.Fatalf("%d of 2 streams settled %v after the kill", len(rows), time.Since(killed))
	}
	waitFor(t, "the holds released", func() bool { return e.counter(t, store.UserScope("kim", store.Tokens)).Reserved == 0 })
}

// TestObservabilityGuarded: with FERRY_GATEWAY_METRICS_TOKEN set, /metrics
// answers only that bearer token; an unreachable upstream is named to users
// without its address.
func TestObservabilityGuarded(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.must("k\n", "upstream", "add", "gone", "--kind", "openai", "--base-url", "http://127.0.0.1:1/v1", "--api-key-stdin")
	e.must("", "route", "add", "gpt", "--upstream", "gone")
	tok := e.addUser("olga")
	t.Setenv("FERRY_GATEWAY_METRICS_TOKEN", "metrics-secret-1")
	g := e.serve()
	get := func(bearer string) int {
		req, _ := http.NewRequest("GET", g.URL+"/metrics", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if a, b, c := get(""), get("wrong"), get("metrics-secret-1"); a != 401 || b != 401 || c != 200 {
		t.Fatalf("/metrics: no token %d, a wrong one %d, the right one %d", a, b, c)
	}
	resp := post(t, g.URL+endpoint("openai"), tok, "openai", chatBody("openai", "gpt", "hi", false, nil))
	body := readAll(t, resp)
	if resp.StatusCode != 502 || strings.Contains(body, "127.0.0.1") || !strings.Contains(body, "connection refused") {
		t.Fatalf("an unreachable upstream, as users see it: %d %s", resp.StatusCode, body)
	}
	if rows := e.requests(1); len(rows) != 1 || strings.Contains(rows[0].Error, "127.0.0.1:1") {
		t.Fatalf("audit: %+v", rows)
	}
}
