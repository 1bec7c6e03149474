package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"netdisk/testutil"
)

// Parallel large PUTs hold the daemon's memory to a few chunks per upload
// plus the drive's chunks in flight, not a full pipeline per upload: 8 × 40
// MiB at once (the client sends faster than the chunks are hashed and
// fsynced, so every pipeline fills) peak well under 8 pipelines of 4 MiB
// chunks (~290 MiB).
func TestParallelPutsMemory(t *testing.T) {
	const (
		uploads = 8
		size    = 40 << 20
		limit   = 160 << 20
	)
	d := testutil.StartDaemon(t)
	ctx := context.Background()
	// One request first: the password is checked once, not by eight
	// first attempts at once (the login throttle counts those in flight).
	resp, err := d.Do(ctx, "PROPFIND", "/dav/", "admin", d.AdminPass, nil, map[string]string{"Depth": "0"})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	block := testutil.RandBytes(1 << 20)
	var g errgroup.Group
	for i := range uploads {
		g.Go(func() error {
			body := io.MultiReader(distinctBlocks(block, byte(i), size/len(block))...)
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, fmt.Sprintf("%s/dav/big%d.bin", d.URL, i), body)
			if err != nil {
				return err
			}
			req.ContentLength = size
			req.SetBasicAuth("admin", d.AdminPass)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				return fmt.Errorf("PUT big%d.bin: %s", i, resp.Status)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if hwm := peakRSS(t, d.Pid()); hwm > limit {
		t.Fatalf("daemon peak RSS %d MiB after %d parallel PUTs of %d MiB, want ≤ %d MiB", hwm>>20, uploads, size>>20, limit>>20)
	}
}

// distinctBlocks is n readers of block, each made distinct (its index and
// seed in its first bytes): no chunk deduplicates against another.
func distinctBlocks(block []byte, seed byte, n int) []io.Reader {
	rs := make([]io.Reader, n)
	for k := range rs {
		b := append([]byte(nil), block...)
		b[0], b[1], b[2] = byte(k), byte(k>>8), seed
		rs[k] = bytes.NewReader(b)
	}
	return rs
}

// peakRSS is VmHWM of process pid, in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			if f := strings.Fields(v); len(f) == 2 && f[1] == "kB" {
				n, err := strconv.ParseInt(f[0], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return n << 10
			}
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
