//go:build browserbench

// Pipe benchmark: the real ferry binary against the raw echo host over plain pipes,
// fork-and-exec, no browser in between. It isolates the hosts' own costs (process
// start, package initialisation, the first reply, the JSON passes of a round trip)
// from Chromium's, and its clock has nanosecond resolution.
//
//	go test -tags browserbench -run TestPipeBench -count=1 -v ./tests/bench
package bench

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/tests/browsertest"
)

// pipeHost is one running host process and the client end of its pipes.
type pipeHost struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	nextID int
}

func startPipeHost(bin string, env []string) (*pipeHost, error) {
	cmd := exec.Command(bin, "chrome-extension://"+buildinfo.ExtensionID+"/")
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &pipeHost{cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 1<<16)}, nil
}

// close ends the host and returns the processor time it used, all its threads.
func (h *pipeHost) close() (float64, error) {
	h.stdin.Close()
	err := h.cmd.Wait()
	st := h.cmd.ProcessState
	return float64((st.UserTime() + st.SystemTime()).Nanoseconds()) / 1e6, err
}

// call sends one request (params already JSON) and reads frames until its reply has
// arrived whole, reassembling $/chunk frames as protocol/PROTOCOL.md says. It returns
// the reply's result, undecoded.
func (h *pipeHost) call(method string, params []byte) (json.RawMessage, error) {
	h.nextID++
	id := strconv.Itoa(h.nextID)
	req := make([]byte, 4, 64+len(params))
	req = append(req, `{"jsonrpc":"2.0","id":`+id+`,"method":"`+method+`","params":`...)
	req = append(req, params...)
	req = append(req, '}')
	binary.NativeEndian.PutUint32(req, uint32(len(req)-4))
	if _, err := h.stdin.Write(req); err != nil {
		return nil, err
	}
	var parts []string
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(h.stdout, hdr[:]); err != nil {
			return nil, fmt.Errorf("%s: reading the reply: %w", method, err)
		}
		body := make([]byte, binary.NativeEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(h.stdout, body); err != nil {
			return nil, fmt.Errorf("%s: reading the reply: %w", method, err)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Index, Count int
				Data         string
			} `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("%s: reply is not JSON: %w", method, err)
		}
		if m.Method == "$/chunk" {
			parts = append(parts, m.Params.Data)
			if len(parts) < m.Params.Count {
				continue
			}
			m.Method = "" // the whole message, decoded into m afresh, has none
			if err := json.Unmarshal([]byte(strings.Join(parts, "")), &m); err != nil {
				return nil, fmt.Errorf("%s: chunked reply is not JSON: %w", method, err)
			}
			parts = nil
		}
		if m.Method != "" || string(m.ID) != id {
			continue // a notification or request from the host: not what we wait for
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %d %s", method, m.Error.Code, m.Error.Message)
		}
		return m.Result, nil
	}
}

var helloParams = []byte(`{"protocol":1,"client":"ferry-bench","client_version":"0"}`)

// pipeFirstReply is the time from starting the process to the whole reply to its
// first request (host.hello) read back, and the processor time the process used
// from start to exit.
func pipeFirstReply(bin string, env []string) (ms, cpu float64, err error) {
	t0 := time.Now()
	h, err := startPipeHost(bin, env)
	if err != nil {
		return 0, 0, err
	}
	if _, err := h.call("host.hello", helloParams); err != nil {
		h.close()
		return 0, 0, err
	}
	ms = msSince(t0)
	cpu, err = h.close()
	return ms, cpu, err
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Nanoseconds()) / 1e6 }

// pipeSuite runs the same plan as the browser benchmark, each measure in a host
// process of its own, so that the processor time of a call can be told too: the
// process's, less startCPU (what a process that only says hello uses), per call.
func pipeSuite(bin string, env []string, p plan, startCPU float64) (result, error) {
	out := result{Sizes: map[string]stats{}}
	measure := func(params []byte, warm, n int, check func(json.RawMessage) error) (stats, error) {
		h, err := startPipeHost(bin, env)
		if err != nil {
			return stats{}, err
		}
		var samples []float64
		_, err = h.call("host.hello", helloParams)
		for i := 0; err == nil && i < warm+n; i++ {
			t := time.Now()
			var r json.RawMessage
			if r, err = h.call("host.ping", params); err == nil {
				err = check(r)
			}
			if i >= warm { // the first calls warm caches and the heap
				samples = append(samples, msSince(t))
			}
		}
		cpu, cerr := h.close()
		if err != nil {
			return stats{}, err
		}
		if cerr != nil {
			return stats{}, cerr
		}
		s := summarise(samples)
		s.CPU = max(0, cpu-startCPU) / float64(warm+n)
		return s, nil
	}
	for _, sz := range p.Sizes {
		size, n := sz[0], sz[1]
		params, _ := json.Marshal(map[string]string{"payload": strings.Repeat("x", size)})
		want := len(params) - len(`{"payload":}`)
		s, err := measure(params, min(20, n), n, func(r json.RawMessage) error {
			if got := len(r) - len(`{"payload":}`); got != want {
				return fmt.Errorf("echo of %d B came back as %d B: %.80s", size, got, r)
			}
			return nil
		})
		if err != nil {
			return out, err
		}
		out.Sizes[strconv.Itoa(size)] = s
	}
	s, err := measure([]byte(`{"size":`+strconv.Itoa(p.ChunkSize)+`}`), 1, p.ChunkRuns, func(json.RawMessage) error { return nil })
	if err != nil {
		return out, err
	}
	s.MiBPerSec = float64(p.ChunkSize) / (1 << 20) / (s.P50 / 1000)
	out.Chunked = s
	return out, nil
}

// summarise is measure.js's summary: p50b is the median of the means of ten
// consecutive calls, the figure the round-trip ratios use in both benchmarks.
func summarise(samples []float64) stats {
	var means []float64
	for i := 0; i+10 <= len(samples); i += 10 {
		var sum float64
		for _, s := range samples[i : i+10] {
			sum += s
		}
		means = append(means, sum/10)
	}
	var total float64
	for _, s := range samples {
		total += s
	}
	s := stats{N: len(samples), P50: median(samples), P99: quantile(samples, 0.99),
		Min: quantile(samples, 0), Max: quantile(samples, 1)}
	s.P50B = s.P50
	if len(means) > 0 {
		s.P50B = median(means)
	}
	if total > 0 {
		s.PerSec = float64(len(samples)) * 1000 / total
	}
	return s
}

func TestPipeBench(t *testing.T) {
	bin := browsertest.TempDir(t, "ferry-pipebench-bin-")
	home := browsertest.TempDir(t, "ferry-pipebench-home-")
	raw, err := browsertest.Build("./tests/rawecho", bin)
	if err != nil {
		t.Fatal(err)
	}
	ferry, err := browsertest.Build("./cmd/ferry", bin)
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "FERRY_HOME="+home)
	// The first start creates and migrates the database, once per installation.
	if _, _, err := pipeFirstReply(ferry, env); err != nil {
		t.Fatal(err)
	}

	loadBefore := loadAverage()
	p := newPlan()
	firstRuns := max(5, p.FirstRuns*3)
	hosts := []struct {
		name, bin string
		rounds    []result
	}{{name: "raw echo", bin: raw}, {name: "ferry", bin: ferry}}
	for range rounds {
		for i := range hosts {
			h := &hosts[i]
			var firsts, cpus []float64
			for range firstRuns {
				ms, cpu, err := pipeFirstReply(h.bin, env)
				if err != nil {
					t.Fatalf("%s: first reply: %v", h.name, err)
				}
				firsts, cpus = append(firsts, ms), append(cpus, cpu)
			}
			f := summarise(firsts)
			f.CPU = median(cpus)
			r, err := pipeSuite(h.bin, env, p, f.CPU)
			if err != nil {
				t.Fatalf("%s: %v", h.name, err)
			}
			r.First = &f
			h.rounds = append(h.rounds, r)
		}
	}
	rawR, ferryR := mergeRounds(hosts[0].rounds), mergeRounds(hosts[1].rounds)

	var sb strings.Builder
	fmt.Fprintf(&sb, "\nFerry pipe benchmark: %s/%s, %d CPUs, load average %s before, %s after\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), loadBefore, loadAverage())
	writeRatioTable(&sb, p, rawR, []namedResult{{"ferry", ferryR}}, wallTime, false)
	fmt.Fprintf(&sb, "\nProcessor time of the host (all threads), which the machine's load moves far less:")
	writeRatioTable(&sb, p, rawR, []namedResult{{"ferry", ferryR}}, cpuTime, false)
	fmt.Fprintf(&sb, "\nEach figure is the median over %d rounds in which the hosts take turns;\n", rounds)
	fmt.Fprintf(&sb, "first reply: process start to host.hello's reply read (p50 of %d starts a round);\n", firstRuns)
	fmt.Fprintf(&sb, "round trips: median of the means of 10 consecutive calls (p50b).\n")
	fmt.Fprintf(&sb, "processor time: first reply, the whole process that only says hello (start, database, exit);\n")
	fmt.Fprintf(&sb, "a call, a measure's process less that, per call.\n")
	fmt.Fprintf(&sb, "The targets are the browser benchmark's (TestBrowserBench): over pipes both hosts skip the\n")
	fmt.Fprintf(&sb, "browser's own costs, and the first reply is mostly the process start (package initialisation).\n")
	fmt.Print(sb.String())
}
