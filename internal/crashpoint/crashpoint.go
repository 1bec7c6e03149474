// Package crashpoint is a test hook for crash tests: with
// NETDISK_CRASH_AFTER_SYNC=N in its environment, the daemon kills itself
// (SIGKILL, no cleanup) right after the N-th durable step once armed: an
// fsync of a blob or its directory, or a metadata commit. A test runs the
// real daemon once for every N, so it crashes at every fsync boundary of its
// workload in turn, and then checks that every acknowledged file survived.
//
// Without the variable (every real deployment) Synced is one atomic load.
package crashpoint

import (
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
)

// EnvVar names the environment variable that sets N.
const EnvVar = "NETDISK_CRASH_AFTER_SYNC"

var (
	limit int64 // N; 0: the hook is off
	armed atomic.Bool
	count atomic.Int64
)

func init() {
	if n, err := strconv.ParseInt(os.Getenv(EnvVar), 10, 64); err == nil && n > 0 {
		limit = n
	}
}

// Arm starts counting: the daemon calls it once it serves, so the steps of
// opening the data directory are not among the N.
func Arm() { armed.Store(limit > 0) }

// Synced records one durable step just completed; the N-th kills the process.
func Synced() {
	if !armed.Load() {
		return
	}
	if count.Add(1) == limit {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way; nothing after the step may run
	}
}
