//go:build !unix

package storage

import "time"

// cpuTime is not measured here: the benchmark's CPU figure reads 0.
func cpuTime() time.Duration { return 0 }
