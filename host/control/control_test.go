//go:build unix

package control

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferryhq/ferry/protocol"
	"github.com/rs/zerolog"
)

// echo answers every authenticated request with its method and params.
func echo(ctx context.Context, p *Peer, method string, params json.RawMessage) (any, error) {
	p.Notify("echo.seen", map[string]string{"method": method})
	return map[string]any{"method": method, "params": params}, nil
}

func listenTest(t *testing.T, home string) *Server {
	t.Helper()
	s, err := Listen(Options{DataDir: home, Handle: echo, Log: zerolog.Nop(), TouchEvery: time.Millisecond,
		Info: Info{Origin: "chrome-extension://test/", Browser: "chromium"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestFilesAndModes(t *testing.T) {
	home := t.TempDir()
	// A folder left with a loose mode is tightened.
	os.MkdirAll(Dir(home), 0o755)
	s := listenTest(t, home)
	sock, token, info := paths(home, os.Getpid())
	if m := mode(t, Dir(home)); m != 0o700 {
		t.Errorf("sockets folder mode %o, want 700", m)
	}
	for _, p := range []string{sock, token, info} {
		if m := mode(t, p); m != 0o600 {
			t.Errorf("%s mode %o, want 600", filepath.Base(p), m)
		}
	}
	b, _ := os.ReadFile(token)
	if len(strings.TrimSpace(string(b))) != 64 {
		t.Errorf("token %q is not 32 random bytes in hex", b)
	}
	hosts, err := List(home)
	if err != nil || len(hosts) != 1 || hosts[0].PID != os.Getpid() || hosts[0].Origin != "chrome-extension://test/" || hosts[0].Socket != sock {
		t.Fatalf("List: %+v %v", hosts, err)
	}
	s.Close()
	for _, p := range []string{sock, token, info} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after Close", filepath.Base(p))
		}
	}
}

func rawConn(t *testing.T, sock string) *protocol.Conn {
	t.Helper()
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	c := protocol.NewConn(nc, nc, func(context.Context, string, json.RawMessage) (any, error) { return nil, nil })
	go c.Serve(context.Background())
	t.Cleanup(func() { nc.Close() })
	return c
}

func TestTokenRequired(t *testing.T) {
	home := t.TempDir()
	s := listenTest(t, home)
	ctx := context.Background()

	// Anything but control.hello first is refused, and the connection closed.
	c := rawConn(t, s.Info().Socket)
	err := c.Call(ctx, "tools.list", nil, nil)
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != protocol.CodeUnauthorized || !strings.Contains(perr.Message, HelloMethod) {
		t.Fatalf("a request before hello: %v", err)
	}
	if err := c.Call(ctx, HelloMethod, map[string]string{"token": s.token}, nil); err == nil {
		t.Errorf("the connection survived a request before hello")
	}
	c = rawConn(t, s.Info().Socket)
	err = c.Call(ctx, HelloMethod, map[string]string{"token": strings.Repeat("0", 64)}, nil)
	if !errors.As(err, &perr) || perr.Code != protocol.CodeUnauthorized || !strings.Contains(perr.Message, "wrong control token") {
		t.Fatalf("a wrong token: %v", err)
	}
	if err := c.Call(ctx, HelloMethod, map[string]string{"token": s.token}, nil); err == nil {
		t.Errorf("the connection survived a wrong token")
	}

	cl, err := Dial(ctx, home, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := make(chan string, 1)
	cl.OnNotify(func(method string, params json.RawMessage) { seen <- method })
	var out struct {
		Method string `json:"method"`
	}
	if err := cl.Call(ctx, "tools.list", map[string]int{"tab_id": 3}, &out); err != nil || out.Method != "tools.list" {
		t.Fatalf("after hello: %+v %v", out, err)
	}
	select {
	case m := <-seen:
		if m != "echo.seen" {
			t.Errorf("notification %q", m)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("no notification reached the client")
	}
}

// deadPID is the pid of a process that has ended.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("cannot run true:", err)
	}
	return cmd.Process.Pid
}

func writeFake(t *testing.T, home string, info Info) {
	t.Helper()
	os.MkdirAll(Dir(home), 0o700)
	sock, token, infoPath := paths(home, info.PID)
	if info.Socket == "" {
		info.Socket = sock
	}
	b, _ := json.Marshal(info)
	os.WriteFile(infoPath, b, 0o600)
	os.WriteFile(token, []byte("x\n"), 0o600)
	if _, err := os.Stat(sock); err != nil {
		os.WriteFile(sock, nil, 0o600) // a file where a socket was
	}
}

func TestStaleSocketCleaned(t *testing.T) {
	home := t.TempDir()
	// A crashed host: its process is gone.
	dead := deadPID(t)
	writeFake(t, home, Info{PID: dead, LastActive: time.Now()})
	// A process that lives (our parent) but does not listen: a reused pid.
	writeFake(t, home, Info{PID: os.Getppid(), LastActive: time.Now()})
	hosts, err := List(home)
	if err != nil || len(hosts) != 0 {
		t.Fatalf("List: %+v %v", hosts, err)
	}
	for _, pid := range []int{dead, os.Getppid()} {
		sock, token, info := paths(home, pid)
		for _, p := range []string{sock, token, info} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("stale %s was not removed", filepath.Base(p))
			}
		}
	}
	if _, err := Dial(context.Background(), home, 0); !errors.Is(err, ErrNoHost) {
		t.Errorf("Dial with no live host: %v", err)
	}
}

func TestMostRecentlyActiveChosen(t *testing.T) {
	home := t.TempDir()
	s := listenTest(t, home)
	// A second live host (our parent's pid, with a real listener) that was active
	// later than this one.
	other, _, _ := paths(home, os.Getppid())
	l, err := net.Listen("unix", other)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	later := s.Info().LastActive.Add(time.Hour)
	writeFake(t, home, Info{PID: os.Getppid(), Socket: other, LastActive: later})
	got, err := Pick(home, 0)
	if err != nil || got.PID != os.Getppid() {
		t.Fatalf("Pick: %+v %v, want the later one", got, err)
	}
	got, err = Pick(home, os.Getpid())
	if err != nil || got.PID != os.Getpid() {
		t.Fatalf("Pick by pid: %+v %v", got, err)
	}
	// Activity moves this host ahead.
	writeFake(t, home, Info{PID: os.Getppid(), Socket: other, LastActive: time.Now().Add(-time.Hour)})
	time.Sleep(5 * time.Millisecond)
	s.Touch()
	if got, _ := Pick(home, 0); got.PID != os.Getpid() {
		t.Errorf("after Touch Pick chose %d", got.PID)
	}
}

func TestAllowed(t *testing.T) {
	def := Allowed(DefaultAllowedTools)
	if !def("list_tasks") || def("execute_script") || def("close_tab") || !def("add_task") {
		t.Errorf("default allowed tools wrong")
	}
	only := Allowed("list_tasks, add_task")
	if !only("list_tasks") || only("create_task") || !only("x", "add_task") {
		t.Errorf("an explicit list is wrong")
	}
	if Allowed("")("list_tasks") {
		t.Errorf("an empty list allows a tool")
	}
}
