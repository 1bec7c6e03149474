package client_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/daemon"
	"netdisk/testutil"
)

// Shared-cache pulls against the daemon's own code in process (daemon.Open,
// its real lock service and drive on a temp data directory), so the lock
// lease runs on a fake clock: a lease passes when the test says so. They sit
// in the external test package: the client package, its own tests too, links
// no server code.

const (
	sharedLease = 15 * time.Second
	sharedChunk = 64 << 10
)

type sharedEnv struct {
	d     *daemon.Daemon
	c     *client.Client
	clock *testutil.Clock
	file  []byte
	hash  string
}

func openSharedEnv(t *testing.T, redisURL string) *sharedEnv {
	t.Helper()
	clock := testutil.NewClock(time.Now())
	d, err := daemon.Open(context.Background(), daemon.Options{DataDir: t.TempDir(), AdminPass: "admin-pass",
		ChunkSize: sharedChunk, Now: clock.Now, LockLease: sharedLease, Redis: redisURL,
		Logger: slog.New(slog.DiscardHandler), Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(d.Server.Handler())
	t.Cleanup(func() { hs.Close(); d.Close() })
	e := &sharedEnv{d: d, c: client.New(hs.URL, "admin", "admin-pass"), clock: clock}
	e.file = bytes.Repeat([]byte("shared cache content "), 20_000) // 420,000 bytes: 7 chunks
	if _, err := e.c.Upload(context.Background(), "/f.bin", bytes.NewReader(e.file), int64(len(e.file))); err != nil {
		t.Fatal(err)
	}
	n, err := e.c.Stat(context.Background(), "/f.bin")
	if err != nil {
		t.Fatal(err)
	}
	e.hash = n.FileHash
	return e
}

// waitFor polls cond (real time, a test's own deadline): the lock service
// answers over HTTP, there is no event to wait on from outside.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

type pullOutcome struct {
	node string
	res  client.SharedPullResult
	err  error
}

// A holder that put the file in the cache and died before unlocking: one
// lease later the queue head is granted the lock, claims it, finds the file
// and unlocks with success, so every waiter finishes then, not one lease
// after the other.
func TestSharedPullGrantedWaiterReleasesQueue(t *testing.T) {
	e := openSharedEnv(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := client.ContentResource(e.hash)
	if a, err := e.c.TryLock(ctx, client.PullOp, res, "holder", "/f.bin"); err != nil || a.Status != apitype.LockAcquired {
		t.Fatalf("holder: %+v %v", a, err)
	}
	cache, outDir := t.TempDir(), t.TempDir()
	const waiters = 4
	done := make(chan pullOutcome, waiters)
	for i := 1; i <= waiters; i++ {
		node := fmt.Sprintf("w%d", i)
		go func() {
			r, err := e.c.SharedPull(ctx, "/f.bin", filepath.Join(outDir, node), client.SharedPullOptions{Cache: cache, Node: node})
			done <- pullOutcome{node, r, err}
		}()
		waitFor(t, node+" queued", func() bool {
			a, err := e.c.LockState(ctx, client.PullOp, res, node)
			return err == nil && a.Status == apitype.LockQueued && a.Position == i
		})
	}
	// The holder's transfer reached the cache; then it vanished.
	if err := os.WriteFile(filepath.Join(cache, e.hash), e.file, 0o644); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(sharedLease + time.Second)
	if err := e.d.Locks.Expire(ctx); err != nil {
		t.Fatal(err)
	}
	for range waiters {
		select {
		case o := <-done:
			if o.err != nil {
				t.Fatalf("%s: %v", o.node, o.err)
			}
			if o.res.Fetched || !o.res.FromCache {
				t.Errorf("%s: fetched %v, from cache %v; want the holder's file from the cache", o.node, o.res.Fetched, o.res.FromCache)
			}
			if b, err := os.ReadFile(filepath.Join(outDir, o.node)); err != nil || !bytes.Equal(b, e.file) {
				t.Errorf("%s: wrong output (%v)", o.node, err)
			}
		case <-ctx.Done():
			t.Fatal("waiters still waiting one lease after the holder vanished: a granted waiter returned without releasing the queue")
		}
	}
	for _, n := range []string{"holder", "w1", "w2", "w3", "w4"} {
		if a, err := e.c.LockState(ctx, client.PullOp, res, n); err != nil || a.Status != apitype.LockNone {
			t.Errorf("%s still on the lock: %+v %v", n, a, err)
		}
	}
}

// A cache entry of the right size with other bytes is never delivered: it
// is discarded, fetched again and the pull gets the file's bytes. The class:
// a waiter woken by a holder's success, and a pull finding the entry at
// once.
func TestSharedPullRefusesPoisonedCache(t *testing.T) {
	e := openSharedEnv(t, "")
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		poison []byte
	}{
		{"same size, other bytes", bytes.Repeat([]byte{'x'}, len(e.file))},
		{"one byte flipped", func() []byte { b := bytes.Clone(e.file); b[len(b)/2] ^= 1; return b }()},
		{"cut short", e.file[:len(e.file)-1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
			entry := filepath.Join(cache, e.hash)
			if err := os.WriteFile(entry, tc.poison, 0o644); err != nil {
				t.Fatal(err)
			}
			var logs testutil.SyncBuffer
			r, err := e.c.SharedPull(ctx, "/f.bin", out, client.SharedPullOptions{Cache: cache, Node: "n1",
				Log: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Fetched {
				t.Errorf("not fetched: the planted entry was trusted")
			}
			for _, p := range []string{out, entry} {
				if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, e.file) {
					t.Errorf("%s: not the file's bytes (%v)", p, err)
				}
			}
			if !strings.Contains(logs.String(), "discarding") {
				t.Errorf("no log of the discarded entry: %q", logs.String())
			}
		})
	}
	// The waiter's side: planted while it waits for a holder that then
	// reports success.
	cache, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	res := client.ContentResource(e.hash)
	if _, err := e.c.TryLock(ctx, client.PullOp, res, "holder", "/f.bin"); err != nil {
		t.Fatal(err)
	}
	done := make(chan pullOutcome, 1)
	go func() {
		r, err := e.c.SharedPull(ctx, "/f.bin", out, client.SharedPullOptions{Cache: cache, Node: "w"})
		done <- pullOutcome{"w", r, err}
	}()
	waitFor(t, "w queued", func() bool {
		a, err := e.c.LockState(ctx, client.PullOp, res, "w")
		return err == nil && a.Status == apitype.LockQueued
	})
	if err := os.WriteFile(filepath.Join(cache, e.hash), bytes.Repeat([]byte{'y'}, len(e.file)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Unlock(ctx, client.PullOp, res, "holder", true); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil || !o.res.Fetched {
		t.Fatalf("waiter: fetched %v, err %v", o.res.Fetched, o.err)
	}
	if b, err := os.ReadFile(out); err != nil || !bytes.Equal(b, e.file) {
		t.Fatalf("waiter delivered other bytes (%v)", err)
	}
}

// With the lock service's Redis gone, a shared pull fetches alone (as a
// plain pull works) and says so once; when Redis is back the next pull
// coordinates again: it queues behind a holder.
func TestSharedPullLockServiceDown(t *testing.T) {
	r := testutil.StartRedis(t)
	e := openSharedEnv(t, r.URL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var logs testutil.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	r.Kill()
	for i := range 2 {
		out := filepath.Join(t.TempDir(), "out")
		res, err := e.c.SharedPull(ctx, "/f.bin", out, client.SharedPullOptions{Cache: t.TempDir(), Node: "n1", Log: log})
		if err != nil {
			t.Fatalf("pull %d with the lock service down: %v", i, err)
		}
		if b, err := os.ReadFile(out); err != nil || !bytes.Equal(b, e.file) || !res.Fetched {
			t.Fatalf("pull %d: fetched %v, wrong output (%v)", i, res.Fetched, err)
		}
	}
	if n := strings.Count(logs.String(), "cannot coordinate"); n != 1 {
		t.Fatalf("%d outage lines, want 1:\n%s", n, logs.String())
	}
	r.Restart()
	res := client.ContentResource(e.hash)
	waitFor(t, "the lock service back", func() bool {
		a, err := e.c.TryLock(ctx, client.PullOp, res, "holder", "/f.bin")
		return err == nil && a.Status == apitype.LockAcquired
	})
	queued := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		_, err := e.c.SharedPull(ctx, "/f.bin", filepath.Join(t.TempDir(), "out"), client.SharedPullOptions{Cache: t.TempDir(), Node: "n1", Log: log,
			OnWait: func(a apitype.LockAnswer) {
				if a.Status == apitype.LockQueued {
					select {
					case queued <- struct{}{}:
					default:
					}
				}
			}})
		done <- err
	}()
	select {
	case <-queued:
	case err := <-done:
		t.Fatalf("pulled without queueing behind the holder (%v)", err)
	}
	if err := e.c.Unlock(ctx, client.PullOp, res, "holder", false); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "coordinates pulls again") {
		t.Fatalf("no log of the lock service's return:\n%s", logs.String())
	}
}
