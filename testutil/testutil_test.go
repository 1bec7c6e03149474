package testutil_test

import (
	"context"
	"strings"
	"testing"

	"netdisk/testutil"
	"netdisk/vpath"
)

// The odd names are what testdata/names.txt promises: each a valid drive
// name as written (vpath.Clean keeps it), at most 255 bytes, no two alike,
// and the 255-byte limit itself is among them.
func TestOddNamesAreValid(t *testing.T) {
	names := testutil.OddNames(t)
	seen := map[string]bool{}
	longest := 0
	for _, n := range names {
		if c, err := vpath.Clean("/" + n); err != nil || c != "/"+n {
			t.Errorf("%q: vpath.Clean gives %q, %v", n, c, err)
		}
		if seen[n] {
			t.Errorf("%q twice", n)
		}
		seen[n] = true
		longest = max(longest, len(n))
	}
	if longest != vpath.MaxNameLen {
		t.Errorf("longest name %d bytes, want one of %d", longest, vpath.MaxNameLen)
	}
}

// The launcher reports a daemon that cannot start as an error (benchmarks
// print it), with what the process printed.
func TestLaunchDaemonReportsFailure(t *testing.T) {
	ctx := context.Background()
	if _, err := testutil.LaunchDaemon(ctx, testutil.DaemonConfig{Bin: "/nonexistent/netdisk", DataDir: t.TempDir()}); err == nil {
		t.Fatal("a missing binary launched")
	}
	sh := testutil.RequireTool(t, "sh")
	// sh runs "serve" as a script file, which does not exist: it prints why and exits.
	_, err := testutil.LaunchDaemon(ctx, testutil.DaemonConfig{Bin: sh, DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "exited early") || !strings.Contains(err.Error(), "serve") {
		t.Fatalf("a daemon that exits at once: %v", err)
	}
}
