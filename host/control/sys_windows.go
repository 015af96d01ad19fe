//go:build windows

package control

import (
	"net"
	"time"
)

// TODO(issue 8): a named pipe (\\.\pipe\ferry-<user>-<pid>) whose security
// descriptor admits only the current user, served with the same protocol. Until
// then hosts on Windows run without a control socket and clients find none.

func listen(path string) (net.Listener, error) { return nil, ErrUnsupported }

func dial(path string, timeout time.Duration) (net.Conn, error) { return nil, ErrUnsupported }

func pidAlive(pid int) bool { return false }
