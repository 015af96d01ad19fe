//go:build unix

package control

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

func listen(path string) (net.Listener, error) {
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// The folder is 0700 already, so nobody else can reach the socket in the moment
	// before this; the mode is belt and braces.
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

func dial(path string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("unix", path, timeout)
}

// pidAlive: signal 0 checks that the process exists (EPERM: it does, as another user).
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
