//go:build windows

package control

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Microsoft/go-winio"
	"github.com/ferryhq/ferry/protocol"
	"github.com/rs/zerolog"
	"golang.org/x/sys/windows"
)

func winEcho(ctx context.Context, p *Peer, method string, params json.RawMessage) (any, error) {
	return map[string]any{"method": method}, nil
}

func winListen(t *testing.T, home string) *Server {
	t.Helper()
	s, err := Listen(Options{DataDir: home, Handle: winEcho, Log: zerolog.Nop(), TouchEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPipeNameWindows(t *testing.T) {
	a, pid, err := pipeName(`C:\Users\A\AppData\Local\ferry\sockets\1234.sock`)
	if err != nil || pid != 1234 {
		t.Fatal(a, pid, err)
	}
	if !strings.HasPrefix(a, `\\.\pipe\ferry-`) || !strings.HasSuffix(a, "-1234") {
		t.Errorf("pipe name %s", a)
	}
	b, _, _ := pipeName(`c:\users\a\appdata\local\ferry\sockets\1234.sock`)
	if a != b {
		t.Errorf("case changes the pipe name: %s %s", a, b)
	}
	c, _, _ := pipeName(`C:\Other\sockets\1234.sock`)
	if a == c {
		t.Errorf("two data directories share %s", a)
	}
	d, pid, err := pipeName(a)
	if err != nil || d != a || pid != 1234 {
		t.Errorf("a pipe name is not kept: %s %d %v", d, pid, err)
	}
	if _, _, err := pipeName(`C:\x\sockets\abc.sock`); err == nil {
		t.Errorf("a path without a pid was accepted")
	}
}

func TestPipeTokenAndACLWindows(t *testing.T) {
	home := t.TempDir()
	s := winListen(t, home)
	ctx := context.Background()

	// A client without the token is refused.
	nc, err := dial(s.Info().Socket, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	raw := protocol.NewConn(nc, nc, func(context.Context, string, json.RawMessage) (any, error) { return nil, nil })
	go raw.Serve(ctx)
	var perr *protocol.Error
	if err := raw.Call(ctx, "tools.list", nil, nil); !errors.As(err, &perr) || perr.Code != protocol.CodeUnauthorized {
		t.Fatalf("a request before hello: %v", err)
	}
	nc.Close()

	cl, err := Dial(ctx, home, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out struct {
		Method string `json:"method"`
	}
	if err := cl.Call(ctx, "host.ping", nil, &out); err != nil || out.Method != "host.ping" {
		t.Fatalf("after hello: %+v %v", out, err)
	}

	// The pipe, the folder and the token grant the current user alone.
	sid, err := currentUserSID()
	if err != nil {
		t.Fatal(err)
	}
	name, _, _ := pipeName(s.Info().Socket)
	_, tokenPath, _ := paths(home, os.Getpid())
	for _, obj := range []struct {
		path string
		typ  windows.SE_OBJECT_TYPE
	}{{name, windows.SE_KERNEL_OBJECT}, {Dir(home), windows.SE_FILE_OBJECT}, {tokenPath, windows.SE_FILE_OBJECT}} {
		sd, err := windows.GetNamedSecurityInfo(obj.path, obj.typ, windows.DACL_SECURITY_INFORMATION)
		if err != nil {
			// The pipe's descriptor is read through a handle by some Windows versions only.
			t.Logf("reading the security of %s: %v", obj.path, err)
			continue
		}
		sddl := sd.String()
		if !strings.Contains(sddl, sid) || strings.Count(sddl, "(A;") != 1 || !strings.Contains(sddl, "D:P") {
			t.Errorf("%s: %s, want one allow ACE for %s", obj.path, sddl, sid)
		}
	}
}

func TestStalePipeCleanedWindows(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(Dir(home), 0o700)
	cmd := exec.Command("cmd", "/c", "exit")
	if err := cmd.Run(); err != nil {
		t.Skip("cannot run cmd:", err)
	}
	for _, pid := range []int{cmd.Process.Pid, os.Getppid()} {
		// A crashed host (process gone) and a live process without a pipe (reused pid).
		sock, token, infoPath := paths(home, pid)
		b, _ := json.Marshal(Info{PID: pid, Socket: sock, LastActive: time.Now()})
		os.WriteFile(infoPath, b, 0o600)
		os.WriteFile(token, []byte("x\n"), 0o600)
	}
	if !pidAlive(os.Getpid()) || pidAlive(cmd.Process.Pid) || pidAlive(0) {
		t.Errorf("pidAlive is wrong: self %v, ended %v, 0 %v", pidAlive(os.Getpid()), pidAlive(cmd.Process.Pid), pidAlive(0))
	}
	hosts, err := List(home)
	if err != nil || len(hosts) != 0 {
		t.Fatalf("List: %+v %v", hosts, err)
	}
	for _, pid := range []int{cmd.Process.Pid, os.Getppid()} {
		_, token, infoPath := paths(home, pid)
		for _, p := range []string{token, infoPath} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("stale %s was not removed", filepath.Base(p))
			}
		}
	}
}

func TestSquattedPipeRefusedWindows(t *testing.T) {
	// A pipe with a host's name served by another process is not trusted: here the
	// name claims our parent's pid while this process serves it.
	home := t.TempDir()
	sock, _, _ := paths(home, os.Getppid())
	name, _, _ := pipeName(sock)
	l, err := winio.ListenPipe(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if c, err := dial(sock, 2*time.Second); err == nil {
		c.Close()
		t.Fatalf("dialled a pipe served by pid %d as if it were pid %d's", os.Getpid(), os.Getppid())
	}
}
