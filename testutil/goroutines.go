package testutil

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// NoGoroutines fails t when goroutines running code under any of the given
// function-name prefixes (say "netdisk/dedup.") are left, apart from the
// caller's own. Call it after closing what started them: Close waits for
// its goroutines, but one that returned may still be unwinding its last
// frames, so the check looks again for a few seconds before failing.
func NoGoroutines(t testing.TB, prefixes ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := goroutinesOf(prefixes)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left running:\n\n%s", len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// goroutinesOf returns the stacks, other than the caller's, with a frame
// whose function name starts with one of prefixes.
func goroutinesOf(prefixes []string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	stacks := strings.Split(string(buf), "\n\n")
	var out []string
	for _, s := range stacks[1:] { // the first is the caller's
		for _, line := range strings.Split(s, "\n") {
			if line == "" || line[0] == '\t' || strings.HasPrefix(line, "goroutine ") {
				continue
			}
			if hasPrefix(line, prefixes) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

func hasPrefix(s string, prefixes []string) bool {
	s = strings.TrimPrefix(s, "created by ")
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
