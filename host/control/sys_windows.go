//go:build windows

package control

// Windows transport: a named pipe \\.\pipe\ferry-<hash of the sockets folder>-<pid>
// whose security descriptor grants access to the current user's SID alone, created
// with PIPE_REJECT_REMOTE_CLIENTS (go-winio always sets it), so only processes of
// this user on this machine can open it. The token and info files live in
// <data>\sockets as on Unix; that folder gets a protected DACL granting only the
// current user (inherited by the files in it), and the token file gets the same
// DACL explicitly. The token check of server.go applies unchanged.
//
// The pipe name is a function of the .sock path that server.go records in the info
// file (<data>\sockets\<pid>.sock, no such file exists on Windows), so a client
// derives the same name from the Socket field; a Socket field that already holds a
// pipe name (\\.\pipe\...) is used as it is.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

const pipePrefix = `\\.\pipe\`

// pipeName derives the pipe of the host whose socket path is path
// (<data>\sockets\<pid>.sock). A path that is a pipe name already is returned as is.
func pipeName(path string) (name string, pid int, err error) {
	if strings.HasPrefix(strings.ToLower(path), strings.ToLower(pipePrefix)) {
		i := strings.LastIndexByte(path, '-')
		if i < 0 {
			return "", 0, fmt.Errorf("control: pipe name %s carries no pid", path)
		}
		pid, err = strconv.Atoi(path[i+1:])
		if err != nil || pid <= 0 {
			return "", 0, fmt.Errorf("control: pipe name %s carries no pid", path)
		}
		return path, pid, nil
	}
	base := filepath.Base(path)
	pid, err = strconv.Atoi(strings.TrimSuffix(base, filepath.Ext(base)))
	if err != nil || pid <= 0 {
		return "", 0, fmt.Errorf("control: %s is not <pid>.sock", path)
	}
	dir := filepath.Dir(path)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	// Paths are case-insensitive on Windows: C:\Users\A and c:\users\a are one folder.
	sum := sha256.Sum256([]byte(strings.ToLower(filepath.Clean(dir))))
	return pipePrefix + "ferry-" + hex.EncodeToString(sum[:8]) + "-" + strconv.Itoa(pid), pid, nil
}

// currentUserSID is the SID of the user this process runs as (the token's user, also
// when elevated).
func currentUserSID() (string, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("control: reading the current user's SID: %w", err)
	}
	return u.User.Sid.String(), nil
}

// pipeSDDL: a protected DACL with one ACE, GENERIC_ALL for the user. Everyone else
// (other users, SYSTEM services, network logons) is denied by omission.
func pipeSDDL(sid string) string { return "D:P(A;;GA;;;" + sid + ")" }

// fileSDDL: the same for the sockets folder and its files, inherited by files
// (OI) and subfolders (CI) created in it.
func fileSDDL(sid string, inherit bool) string {
	if inherit {
		return "D:P(A;OICI;FA;;;" + sid + ")"
	}
	return "D:P(A;;FA;;;" + sid + ")"
}

// restrict replaces the DACL of a file or folder with sddl's, protected from
// inheritance. For a folder, SetNamedSecurityInfo also propagates the inheritable
// ACE to what the folder holds already (the token written before listen).
func restrict(path, sddl string) error {
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	return windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
}

func listen(path string) (net.Listener, error) {
	name, _, err := pipeName(path)
	if err != nil {
		return nil, err
	}
	sid, err := currentUserSID()
	if err != nil {
		return nil, err
	}
	// The folder of the token and info files: the user alone (Chmod 0700 means
	// nothing on Windows). Failing that, no socket: the token would be readable by
	// whoever the data directory lets in.
	dir := filepath.Dir(path)
	if err := restrict(dir, fileSDDL(sid, true)); err != nil {
		return nil, fmt.Errorf("control: restricting %s to the current user: %w", dir, err)
	}
	tokenPath := strings.TrimSuffix(path, filepath.Ext(path)) + ".token"
	if err := restrict(tokenPath, fileSDDL(sid, false)); err != nil {
		return nil, fmt.Errorf("control: restricting %s to the current user: %w", tokenPath, err)
	}
	// ListenPipe creates the pipe with FILE_CREATE (it fails if another process holds
	// the name already, so nobody can squat it and have us share it) and with
	// PIPE_REJECT_REMOTE_CLIENTS.
	l, err := winio.ListenPipe(name, &winio.PipeConfig{
		SecurityDescriptor: pipeSDDL(sid),
		InputBufferSize:    64 << 10,
		OutputBufferSize:   64 << 10,
	})
	if err != nil {
		return nil, fmt.Errorf("control: creating the pipe %s: %w", name, err)
	}
	return l, nil
}

func dial(path string, timeout time.Duration) (net.Conn, error) {
	name, pid, err := pipeName(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := winio.DialPipeContext(ctx, name)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("control: %s: %w", name, winio.ErrTimeout)
		}
		return nil, err
	}
	// The pipe must be served by the host the info file names: a process that took
	// the name after that host died does not get the token.
	if f, ok := c.(interface{ Fd() uintptr }); ok {
		var server uint32
		if err := windows.GetNamedPipeServerProcessId(windows.Handle(f.Fd()), &server); err != nil {
			c.Close()
			return nil, fmt.Errorf("control: asking who serves %s: %w", name, err)
		}
		if int(server) != pid {
			c.Close()
			return nil, fmt.Errorf("control: %s is served by pid %d, not by the host (pid %d)", name, server, pid)
		}
	}
	return c, nil
}

// stillActive is the exit code GetExitCodeProcess reports for a running process.
const stillActive = 259

// pidAlive: the process can be opened and has not exited. Access denied means it
// exists (as another user, or protected).
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_ACCESS_DENIED)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return true // it exists; whether it has ended, the pipe dial decides
	}
	return code == stillActive
}
