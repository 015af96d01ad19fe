//go:build browserbench

// Browser benchmark: ferry against a raw Go echo host (tests/rawecho), both reached
// from the real extension's service worker through Chromium's native messaging.
//
// Run (prints a table; -v is needed for go test to show it):
//
//	go test -tags browserbench -run TestBrowserBench -count=1 -v ./tests/bench
//
// or scripts/bench. FERRY_BENCH_SCALE=0.2 shortens the run; FERRY_BENCH_RAW_ONLY=1
// measures only the raw host (the machine's floor), and FERRY_BENCH_EXTENSION
// points at another extension directory for that case.
package bench

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/tests/browsertest"
)

//go:embed measure.js
var measureJS string

const (
	rawHostName = "ferry_rawecho"
	chunkSize   = 5 << 20
	smallSize   = 64
)

type stats struct {
	N         int     `json:"n"`
	P50       float64 `json:"p50"`
	P99       float64 `json:"p99"`
	P50B      float64 `json:"p50b"`
	Min       float64 `json:"min"`
	Max       float64 `json:"max"`
	PerSec    float64 `json:"perSec"`
	MiBPerSec float64 `json:"mibPerSec"`
	CPU       float64 `json:"cpu,omitempty"` // processor ms of the host (the pipe benchmark)
}

type result struct {
	First   *stats           `json:"first"`
	Sizes   map[string]stats `json:"sizes"`
	Chunked stats            `json:"chunked"`
}

type plan struct {
	Sizes     [][2]int `json:"sizes"` // [payload bytes, iterations]
	ChunkSize int      `json:"chunkSize"`
	ChunkRuns int      `json:"chunkRuns"`
	FirstRuns int      `json:"firstRuns"`
}

// rounds: the hosts take turns, a round each, and every figure is the median over
// rounds. A burst of load from another process then spoils one round of one host
// instead of deciding a ratio.
const rounds = 3

// newPlan sizes one round.
func newPlan() plan {
	scale := 1.0
	if s, err := strconv.ParseFloat(os.Getenv("FERRY_BENCH_SCALE"), 64); err == nil && s > 0 {
		scale = s
	}
	n := func(i int) int { return max(5, int(float64(i)*scale)) }
	return plan{
		Sizes:     [][2]int{{smallSize, n(700)}, {64 << 10, n(170)}, {900 << 10, n(20)}},
		ChunkSize: chunkSize,
		ChunkRuns: n(4),
		FirstRuns: n(10),
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// medianStats takes each figure's median over the rounds.
func medianStats(ss []stats) stats {
	field := func(f func(stats) float64) float64 {
		var xs []float64
		for _, s := range ss {
			xs = append(xs, f(s))
		}
		return median(xs)
	}
	var n int
	for _, s := range ss {
		n += s.N
	}
	return stats{N: n,
		P50: field(func(s stats) float64 { return s.P50 }), P99: field(func(s stats) float64 { return s.P99 }),
		P50B: field(func(s stats) float64 { return s.P50B }), Min: field(func(s stats) float64 { return s.Min }),
		Max: field(func(s stats) float64 { return s.Max }), PerSec: field(func(s stats) float64 { return s.PerSec }),
		MiBPerSec: field(func(s stats) float64 { return s.MiBPerSec }),
		CPU:       field(func(s stats) float64 { return s.CPU }),
	}
}

func mergeRounds(rs []result) result {
	out := result{Sizes: map[string]stats{}}
	var firsts, chunks []stats
	sizes := map[string][]stats{}
	for _, r := range rs {
		if r.First != nil {
			firsts = append(firsts, *r.First)
		}
		chunks = append(chunks, r.Chunked)
		for k, v := range r.Sizes {
			sizes[k] = append(sizes[k], v)
		}
	}
	if len(firsts) > 0 {
		f := medianStats(firsts)
		out.First = &f
	}
	out.Chunked = medianStats(chunks)
	for k, v := range sizes {
		out.Sizes[k] = medianStats(v)
	}
	return out
}

func TestBrowserBench(t *testing.T) {
	browsertest.RequireChromium(t)
	rawOnly := os.Getenv("FERRY_BENCH_RAW_ONLY") == "1"
	extDir := browsertest.ExtensionDir()
	if d := os.Getenv("FERRY_BENCH_EXTENSION"); d != "" && rawOnly {
		extDir = d
	}

	bin := browsertest.TempDir(t, "ferry-bench-bin-")
	home := browsertest.TempDir(t, "ferry-bench-home-")
	userData := browsertest.TempDir(t, "ferry-bench-profile-")
	raw, err := browsertest.Build("./tests/rawecho", bin)
	if err != nil {
		t.Fatal(err)
	}
	if !rawOnly {
		ferry, err := browsertest.Build("./cmd/ferry", bin)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(ferry, "install", "--browser", "chromium", "--user-data-dir", userData)
		cmd.Env = append(os.Environ(), "FERRY_HOME="+home)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ferry install: %v\n%s", err, out)
		}
	}
	if err := browsertest.RegisterHost(userData, rawHostName, raw, browsertest.ExtensionID(extDir)); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	logPath := filepath.Join(bin, "chromium.log")
	b, err := browsertest.Launch(ctx, browsertest.Options{
		UserDataDir:  userData,
		ExtensionDir: extDir,
		Env:          []string{"FERRY_HOME=" + home},
		Log:          logPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		b.Close()
		if t.Failed() {
			browsertest.DumpTail(t, "chromium output (includes the hosts' stderr)", logPath, 60)
		}
	}()
	sw, cancelSW, err := b.ServiceWorker(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cancelSW()
	if !rawOnly {
		if err := browsertest.WaitFor(ctx, sw, `typeof globalThis.ferryHost?.request === 'function'`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := browsertest.Eval[bool](sw, measureJS); err != nil {
		t.Fatal(err)
	}

	loadBefore := loadAverage()
	p := newPlan()
	pj, _ := json.Marshal(p)
	run := func(expr string) result {
		t.Helper()
		var r result
		v, err := browsertest.Eval[json.RawMessage](sw, expr)
		if err == nil {
			err = json.Unmarshal(v, &r)
		}
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return r
	}
	type row struct {
		name, expr string
		rounds     []result
		r          result
	}
	rows := []*row{{name: "raw echo (connectNative)", expr: `__ferryBench.native('` + rawHostName + `', ` + string(pj) + `)`}}
	if !rawOnly {
		rows = append(rows,
			&row{name: "ferry (connectNative)", expr: `__ferryBench.native('` + buildinfo.HostName + `', ` + string(pj) + `)`},
			&row{name: "ferry (ferryHost.request)", expr: `__ferryBench.client(` + string(pj) + `)`})
	}
	for range rounds {
		for _, row := range rows {
			row.rounds = append(row.rounds, run(row.expr))
		}
	}
	for _, row := range rows {
		row.r = mergeRounds(row.rounds)
	}

	var sb strings.Builder
	fmt.Fprintf(&sb, "\nFerry browser benchmark: %s, %d CPUs, load average %s before, %s after\n\n",
		chromiumVersion(), runtime.NumCPU(), loadBefore, loadAverage())
	fmt.Fprintf(&sb, "%-27s %-13s %9s %9s %9s %10s\n", "client / host", "measure", "p50 ms", "p50b ms", "p99 ms", "rate")
	for _, row := range rows {
		if row.r.First != nil {
			fmt.Fprintf(&sb, "%-27s %-13s %9.2f %9s %9.2f %10s\n", row.name, "first reply", row.r.First.P50, "", row.r.First.P99, "")
		}
		for _, sz := range p.Sizes {
			s := row.r.Sizes[strconv.Itoa(sz[0])]
			fmt.Fprintf(&sb, "%-27s %-13s %9.2f %9.3f %9.2f %8.0f/s\n", row.name, "rtt "+sizeName(sz[0]), s.P50, s.P50B, s.P99, s.PerSec)
		}
		c := row.r.Chunked
		fmt.Fprintf(&sb, "%-27s %-13s %9.1f %9s %9.1f %4.1f MiB/s\n", row.name, "5 MiB chunked", c.P50, "", c.P99, c.MiBPerSec)
	}
	if !rawOnly {
		writeRatioTable(&sb, p, rows[0].r, []namedResult{{rows[1].name, rows[1].r}, {rows[2].name, rows[2].r}}, wallTime, true)
	}
	fmt.Fprintf(&sb, "\nEach figure is the median over %d rounds in which the hosts take turns.\n", rounds)
	fmt.Fprintf(&sb, "p50b: median of the means of 10 consecutive calls (performance.now() in a worker ticks in 0.1 ms)\n")
	fmt.Print(sb.String())
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10:
		return strconv.Itoa(n>>10) + " KiB"
	default:
		return strconv.Itoa(n) + " B"
	}
}

func chromiumVersion() string {
	out, err := exec.Command(browsertest.ChromiumPath(), "--version").Output()
	if err != nil {
		return browsertest.ChromiumPath()
	}
	return strings.TrimSpace(string(out))
}

// loadAverage is the 1-minute load average: figures taken while it exceeds the CPU
// count measure the other processes as much as Ferry.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}
