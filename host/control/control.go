// Package control is the local control socket of a running host: the way outside
// programs on the same machine (`ferry run`, `ferry mcp`) reach the host a browser
// started, and through it the browser's tabs and the pages' actions.
//
// Each host listens on a Unix domain socket <data>/sockets/<pid>.sock in a 0700
// folder (the socket itself 0600), with a random token in <pid>.token (0600) beside
// it and a small JSON description in <pid>.json. A client must present the token in
// a first control.hello request; the connection then speaks the same framing and
// JSON-RPC as the extension's native port, against the same methods and registry.
// Until the token is accepted a client costs the host little: one frame of at most
// MaxHelloFrame bytes, read under HelloTimeout, in one of MaxPendingClients places
// (server.go). There is no TCP port: no web page can reach it.
//
// On Windows the transport is a named pipe that only the current user may open and
// no remote client can reach (sys_windows.go); the token and description files are
// kept the same way, in a folder restricted to the user.
package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Info describes one live host, as written in <pid>.json.
type Info struct {
	PID     int    `json:"pid"`
	Socket  string `json:"socket"`
	Version string `json:"version,omitempty"`
	// Origin is the extension origin that started the host; Browser the parent
	// process's name and Profile the browser's user data directory and profile, when
	// the host can tell.
	Origin     string    `json:"origin,omitempty"`
	Browser    string    `json:"browser,omitempty"`
	Profile    string    `json:"profile,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	LastActive time.Time `json:"last_active"`
}

// Dir is the folder of the sockets of the hosts sharing dataDir.
func Dir(dataDir string) string { return filepath.Join(dataDir, "sockets") }

func paths(dataDir string, pid int) (sock, token, info string) {
	base := filepath.Join(Dir(dataDir), strconv.Itoa(pid))
	return base + ".sock", base + ".token", base + ".json"
}

// ErrNoHost means no live host listens in the data directory.
var ErrNoHost = errors.New("no running browser host: open Chrome (or another browser) with the Ferry extension")

// ErrUnsupported is returned by Listen and Dial on a system with neither Unix
// sockets nor named pipes.
var ErrUnsupported = errors.New("the control socket is not supported on this system yet")

// List returns the live hosts of dataDir, most recently active first. Files left by
// a host that is gone (its process ended, or its socket no longer answers) are
// removed on the way.
func List(dataDir string) ([]Info, error) {
	entries, err := os.ReadDir(Dir(dataDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSuffix(name, ".json"))
		if err != nil || pid <= 0 {
			continue
		}
		info, err := readInfo(dataDir, pid)
		if err != nil || !alive(info) {
			removeFiles(dataDir, pid)
			continue
		}
		out = append(out, info)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LastActive.After(out[j].LastActive) })
	return out, nil
}

// Pick chooses a host: the one with pid, or (pid 0) the most recently active.
func Pick(dataDir string, pid int) (Info, error) {
	hosts, err := List(dataDir)
	if err != nil {
		return Info{}, err
	}
	for _, h := range hosts {
		if pid == 0 || h.PID == pid {
			return h, nil
		}
	}
	if pid != 0 {
		return Info{}, fmt.Errorf("no running browser host with pid %d (ferry finds %d)", pid, len(hosts))
	}
	return Info{}, ErrNoHost
}

func readInfo(dataDir string, pid int) (Info, error) {
	_, _, infoPath := paths(dataDir, pid)
	b, err := os.ReadFile(infoPath)
	if err != nil {
		return Info{}, err
	}
	var info Info
	if err := json.Unmarshal(b, &info); err != nil {
		return Info{}, err
	}
	if info.PID != pid {
		return Info{}, fmt.Errorf("%s describes pid %d", infoPath, info.PID)
	}
	return info, nil
}

// alive: the process exists and its socket accepts a connection.
func alive(info Info) bool {
	if !pidAlive(info.PID) {
		return false
	}
	c, err := dial(info.Socket, 500*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func removeFiles(dataDir string, pid int) {
	sock, token, info := paths(dataDir, pid)
	for _, p := range []string{sock, token, info} {
		os.Remove(p)
	}
}

// writeFileAtomic replaces path with data (mode 0600) so a reader never sees half.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
