//go:build !unix && !windows

package main

import "os"

func terminalWidth(*os.File) int { return 0 }
