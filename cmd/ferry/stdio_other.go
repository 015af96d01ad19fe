//go:build !unix

package main

import "os"

// pollable leaves f as it is on systems without the Unix poller's pipes.
func pollable(f *os.File) *os.File { return f }
