package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/model/modeltest"
	"github.com/ferryhq/ferry/tests/loopback"
)

// These benchmarks print their figures; run them with
//   go test -run '^$' -bench . -benchtime 1x ./gateway/e2e/
// The speed targets are theirs, not the tests': a loaded machine is slow.

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

func pct(ds []time.Duration, p float64) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[int(float64(len(ds)-1)*p)]
}

// timeOne makes one request and returns the time to its first byte and to its end.
func timeOne(b *testing.B, c *http.Client, url, auth string, body string) (ttfb, total time.Duration) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadByte(); err != nil {
		b.Fatal(err)
	}
	ttfb = time.Since(start)
	for {
		if _, err := br.ReadByte(); err != nil {
			break
		}
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
	return ttfb, time.Since(start)
}

// BenchmarkAddedLatency: what the gateway adds to a call of the fake upstream,
// the median over 400 calls each way, whole answers and streams (time to first
// byte), for a user without limits and one with a token quota and a rate limit
// (which take the quota in the database before the call).
func BenchmarkAddedLatency(b *testing.B) {
	for _, limited := range []bool{false, true} {
		name := "no-quota"
		if limited {
			name = "quota"
		}
		b.Run(name, func(b *testing.B) { benchLatency(b, limited) })
	}
}

func benchLatency(b *testing.B, limited bool) {
	fake := modeltest.NewOpenAI(b)
	fake.SetResponder(func(modeltest.Request) modeltest.Turn {
		return modeltest.Turn{Text: "ok", InputTokens: 5, OutputTokens: 1}
	})
	e := newEnv(b, "sqlite")
	e.must("", "upstream", "add", "oa", "--kind", "openai", "--base-url", fake.URL)
	e.must("", "route", "add", "gpt", "--upstream", "oa")
	flags := []string{}
	if limited {
		flags = []string{"--daily-tokens", "1000000000", "--rpm", "1000000"}
	}
	tok := e.addUser("bench", flags...)
	gw := e.serve()
	c := &http.Client{Transport: &http.Transport{DialContext: loopback.Dial, MaxIdleConnsPerHost: 4}}
	whole := `{"model":"gpt","messages":[{"role":"user","content":"hi"}],"max_tokens":8}`
	stream := `{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":8}`
	const n = 400
	measure := func(url, auth, body string) (ttfb, total []time.Duration) {
		for i := 0; i < 50; i++ {
			timeOne(b, c, url, auth, body)
		}
		for i := 0; i < n; i++ {
			f, t := timeOne(b, c, url, auth, body)
			ttfb, total = append(ttfb, f), append(total, t)
		}
		return
	}
	b.ResetTimer()
	for range b.N {
		_, dWhole := measure(fake.URL+"/chat/completions", "", whole)
		_, gWhole := measure(gw.URL+"/v1/chat/completions", tok, whole)
		dTTFB, _ := measure(fake.URL+"/chat/completions", "", stream)
		gTTFB, _ := measure(gw.URL+"/v1/chat/completions", tok, stream)
		dw, gwh := pct(dWhole, .5), pct(gWhole, .5)
		ds, gs := pct(dTTFB, .5), pct(gTTFB, .5)
		fmt.Printf("added latency (quota=%v): whole p50 %v direct, %v through the gateway: +%v (p90 +%v); stream first byte p50 %v direct, %v through: +%v (p90 +%v); load %s\n",
			limited, dw, gwh, gwh-dw, pct(gWhole, .9)-pct(dWhole, .9), ds, gs, gs-ds, pct(gTTFB, .9)-pct(dTTFB, .9), loadavg())
		b.ReportMetric(float64((gwh - dw).Microseconds()), "added-whole-p50-µs")
		b.ReportMetric(float64((gs - ds).Microseconds()), "added-ttfb-p50-µs")
	}
}

// Benchmark500Streams: five hundred streams at once through one gateway, each
// about a second long; none may fail. Prints the gateway's peak memory.
func Benchmark500Streams(b *testing.B) {
	fake := modeltest.NewAnthropic(b)
	fake.SetResponder(func(modeltest.Request) modeltest.Turn {
		return modeltest.Turn{Text: strings.Repeat("stream ", 40), ChunkDelay: 20 * time.Millisecond, InputTokens: 10, OutputTokens: 40}
	})
	e := newEnv(b, "sqlite")
	e.must("", "upstream", "add", "an", "--kind", "anthropic", "--base-url", fake.URL)
	e.must("", "route", "add", "claude", "--upstream", "an")
	tok := e.addUser("bench", "--daily-tokens", "100000000", "--rpm", "100000")
	gw := e.serve()
	c := &http.Client{Transport: &http.Transport{DialContext: loopback.Dial, MaxIdleConnsPerHost: 600, MaxConnsPerHost: 0}}
	body := `{"model":"claude","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"go"}]}`
	for range b.N {
		var fails, done atomic.Int64
		var firstErr atomic.Value
		var wg sync.WaitGroup
		start := time.Now()
		for i := 0; i < 500; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("POST", gw.URL+"/v1/messages", strings.NewReader(body))
				req.Header.Set("x-api-key", tok)
				req.Header.Set("anthropic-version", "2023-06-01")
				resp, err := c.Do(req)
				if err != nil {
					fails.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					return
				}
				sc := bufio.NewScanner(resp.Body)
				ok := false
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "event: message_stop") {
						ok = true
					}
				}
				resp.Body.Close()
				if !ok || resp.StatusCode != 200 {
					fails.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("status %d, no message_stop", resp.StatusCode))
					return
				}
				done.Add(1)
			}()
		}
		wg.Wait()
		took := time.Since(start)
		rss, hwm := procMem(gw.cmd.Process.Pid)
		fmt.Printf("500 concurrent streams: %d complete, %d failed, in %v; gateway memory now %s, peak %s; load %s\n",
			done.Load(), fails.Load(), took.Round(time.Millisecond), rss, hwm, loadavg())
		if fails.Load() > 0 {
			b.Fatalf("%d streams failed; first: %v", fails.Load(), firstErr.Load())
		}
	}
}

func procMem(pid int) (rss, hwm string) {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			rss = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			hwm = strings.TrimSpace(v)
		}
	}
	return
}
