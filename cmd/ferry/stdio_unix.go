//go:build unix

package main

import (
	"os"
	"syscall"
)

// pollable returns f as a file the Go runtime's poller waits on, when f is a pipe or
// a socket (what a browser gives its host's stdin). An inherited stdin is in blocking
// mode: every read parked a thread in the kernel, and each request was handed to
// another thread to run. Through the poller the reading goroutine parks instead and
// the request runs at once on the same thread. The browser holds only the other end
// of the pipe, so the non-blocking mode is this process's alone. (Writes stay
// blocking: a frame larger than the pipe then waits in the kernel for the browser to
// read, which costs less than waking through the poller for every slice.)
//
// The new file shares f's descriptor: f must stay reachable while it is in use, or
// its finalizer closes the descriptor under the new file.
func pollable(f *os.File) *os.File {
	fd := int(f.Fd())
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return f
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return f
	}
	if syscall.SetNonblock(fd, true) != nil {
		return f
	}
	// NewFile sees the non-blocking mode and registers the descriptor with the poller.
	return os.NewFile(uintptr(fd), f.Name())
}
