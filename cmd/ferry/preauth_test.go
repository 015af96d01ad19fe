package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferryhq/ferry/host/control"
	"github.com/ferryhq/ferry/protocol"
)

// The control socket before the token: what a process on the same machine that
// cannot read the token file can make the real host do. The finding was that a 60
// MiB frame was read and parsed before the token check (the host grew to about
// 213 MB), with no deadline for control.hello and no cap on connections.

// procStatus reads a field of /proc/PID/status in KiB (VmRSS now, VmHWM the peak).
func procStatus(t testing.TB, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

// refusedAnswer reads the error a refused client is sent, then expects the hang-up.
func refusedAnswer(nc net.Conn) (*protocol.Error, error) {
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	f, err := protocol.ReadFrame(nc, protocol.MaxInboundFrame)
	if err != nil {
		return nil, fmt.Errorf("no answer: %w", err)
	}
	var m protocol.Message
	if err := json.Unmarshal(f, &m); err != nil || m.Error == nil {
		return nil, fmt.Errorf("answer %s is not an error", f)
	}
	// A hang-up with bytes the host never read shows as a reset.
	if _, err := protocol.ReadFrame(nc, protocol.MaxInboundFrame); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		return m.Error, fmt.Errorf("still open after the refusal: %v", err)
	}
	return m.Error, nil
}

// flood has n clients connect to the host's socket at once and each send a frame of
// size bytes (length prefix, then the body, as far as the host lets it in) without a
// token. It returns how each was answered.
func flood(t testing.TB, sock string, n int, size uint32) map[int]int {
	body := make([]byte, 1<<20)
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			nc, err := net.Dial("unix", sock)
			if err != nil {
				t.Errorf("dial: %v", err)
				return
			}
			defer nc.Close()
			// Write on its own goroutine: the host answers (and hangs up) on the length
			// alone, and a blocked write must not keep the answer from being read.
			go func() {
				if _, err := nc.Write(binary.NativeEndian.AppendUint32(nil, size)); err != nil {
					return
				}
				for sent := uint32(0); sent < size; sent += uint32(len(body)) {
					if _, err := nc.Write(body); err != nil {
						return
					}
				}
			}()
			e, err := refusedAnswer(nc)
			if err != nil {
				t.Errorf("client: %v", err)
			}
			if e != nil {
				mu.Lock()
				codes[e.Code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return codes
}

// preAuthFlood runs the finding against a real host and returns its idle RSS and its
// peak RSS (KiB) while 100 clients each send a 60 MiB frame before any token.
func preAuthFlood(t testing.TB) (idle, peak int64, codes map[int]int, home string) {
	if runtime.GOOS != "linux" {
		t.Skip("measures the host's memory through /proc")
	}
	home = t.TempDir()
	h := startHost(t, home, pinnedOrigin)
	h.send(req(1, "host.hello", map[string]any{"protocol": 1}))
	h.recv()
	info := waitForHost(t, home)
	pid := h.cmd.Process.Pid
	// Settle: the control socket and the first replies are done.
	time.Sleep(200 * time.Millisecond)
	idle = procStatus(t, pid, "VmRSS")
	hwmBefore := procStatus(t, pid, "VmHWM")
	codes = flood(t, info.Socket, 100, 60<<20)
	peak = max(procStatus(t, pid, "VmHWM"), hwmBefore)
	// The host is unharmed: an authenticated client is served at once.
	c, err := control.DialInfo(context.Background(), home, info)
	if err != nil {
		t.Fatalf("authenticated client after the flood: %v", err)
	}
	defer c.Close()
	var out map[string]any
	if err := c.Call(context.Background(), "host.ping", map[string]any{"payload": "still here"}, &out); err != nil || out["payload"] != "still here" {
		t.Fatalf("ping after the flood: %v %v", out, err)
	}
	return idle, peak, codes, home
}

func TestControlSocketPreAuthFloodIsBounded(t *testing.T) {
	idle, peak, codes, home := preAuthFlood(t)
	t.Logf("host RSS idle %d KiB, peak %d KiB during the flood (+%.1f MiB); answers %v; loadavg %s",
		idle, peak, float64(peak-idle)/1024, codes, loadavg())
	if grown := peak - idle; grown > 64<<10 {
		t.Errorf("the host grew by %d KiB while unauthenticated clients sent 60 MiB frames; the bound is 64 MiB", grown)
	}
	if codes[protocol.CodeUnauthorized]+codes[protocol.CodeBusy] != 100 {
		t.Errorf("answers %v: every client should be refused, unauthorized or busy", codes)
	}
	if codes[protocol.CodeUnauthorized] == 0 {
		t.Errorf("answers %v: no client reached the size check", codes)
	}
	// A flood does not flood the log file.
	log, _ := os.ReadFile(filepath.Join(home, "logs", "ferry.log"))
	if n := strings.Count(string(log), "refused clients before the token"); n == 0 || n > 3 {
		t.Errorf("%d log lines about refused clients for one flood", n)
	}
}

// BenchmarkControlSocketPreAuthFlood prints the figure: the host's peak
// memory above idle while 100 unauthenticated clients each send a 60 MiB frame.
func BenchmarkControlSocketPreAuthFlood(b *testing.B) {
	for b.Loop() {
		idle, peak, _, _ := preAuthFlood(b)
		b.ReportMetric(float64(peak-idle)/1024, "MiB-above-idle")
		b.ReportMetric(float64(peak)/1024, "MiB-peak")
		b.Logf("loadavg %s", loadavg())
	}
}

// A client that connects and says nothing is cut off at the hello deadline (a few
// seconds), and told why; past the cap of pending connections a newcomer is turned
// away at once (a token holder too: before its hello nobody can tell), and a token
// holder gets in as soon as a place is free.
func TestControlSocketHelloDeadlineAndCap(t *testing.T) {
	home := t.TempDir()
	startHost(t, home, pinnedOrigin)
	info := waitForHost(t, home)

	silent, err := net.Dial("unix", info.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	start := time.Now()
	e, err := refusedAnswer(silent)
	if err != nil || e.Code != protocol.CodeUnauthorized || !strings.Contains(e.Message, "in time") {
		t.Fatalf("a silent client: %+v %v", e, err)
	}
	t.Logf("silent client cut off after %s", time.Since(start).Round(time.Millisecond))

	var idle []net.Conn
	for range control.MaxPendingClients {
		nc, err := net.Dial("unix", info.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		idle = append(idle, nc)
	}
	// The host counts a connection when it accepts it: the newcomer is refused once
	// all the places are taken, which a few tries make sure of.
	var refused *protocol.Error
	for try := 0; try < 50 && refused == nil; try++ {
		nc, err := net.Dial("unix", info.Socket)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		f, err := protocol.ReadFrame(nc, protocol.MaxInboundFrame)
		nc.Close()
		var m protocol.Message
		if err == nil && json.Unmarshal(f, &m) == nil && m.Error != nil && m.Error.Code == protocol.CodeBusy {
			refused = m.Error
		} else if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("newcomer: %v", err)
		}
	}
	if refused == nil || !strings.Contains(refused.Message, "without having presented the token") {
		t.Fatalf("with %d silent clients connected a newcomer was not turned away: %+v", len(idle), refused)
	}
	idle[0].Close()
	for try := 0; ; try++ {
		c, err := control.DialInfo(context.Background(), home, info)
		if err == nil {
			c.Close()
			break
		}
		if try == 100 {
			t.Fatalf("no room after a silent client left: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
