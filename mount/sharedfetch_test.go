package mount_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/daemon"
	"netdisk/mount"
	"netdisk/testutil"
)

// Mounts sharing a cache wait for a chunk behind a holder that cached it and
// died before unlocking: one lease later the queue head is granted the lock
// and Take claims it (done != nil) even though the chunk is there, so its
// done(true) wakes every mount behind it instead of each waiting a lease.
// The daemon's code runs in process, its lock lease on a fake clock.
func TestChunkLockGrantedMountReleasesQueue(t *testing.T) {
	const lease = 15 * time.Second
	clock := testutil.NewClock(time.Now())
	d, err := daemon.Open(context.Background(), daemon.Options{DataDir: t.TempDir(), AdminPass: "admin-pass",
		Now: clock.Now, LockLease: lease, Logger: slog.New(slog.DiscardHandler), Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(d.Server.Handler())
	t.Cleanup(func() { hs.Close(); d.Close() })
	body := bytes.Repeat([]byte("one chunk "), 100)
	req, _ := http.NewRequest(http.MethodPut, hs.URL+"/dav/f.bin", bytes.NewReader(body))
	req.SetBasicAuth("admin", "admin-pass")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sum := sha256.Sum256(body)
	sha := hex.EncodeToString(sum[:])
	res := "chunk:" + sha
	c := client.New(hs.URL, "admin", "admin-pass")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if a, err := c.TryLock(ctx, client.PullOp, res, "holder", "/f.bin"); err != nil || a.Status != apitype.LockAcquired {
		t.Fatalf("holder: %+v %v", a, err)
	}
	type took struct {
		node string
		done func(bool)
		err  error
	}
	const mounts = 3
	out := make(chan took, mounts)
	for i := 1; i <= mounts; i++ {
		node := fmt.Sprintf("m%d", i)
		go func() {
			done, err := (&mount.HTTPChunkLocks{C: c, Node: node}).Take(ctx, "/f.bin", sha)
			out <- took{node, done, err}
		}()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			a, err := c.LockState(ctx, client.PullOp, res, node)
			if err == nil && a.Status == apitype.LockQueued && a.Position == i {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never queued", node)
			}
		}
	}
	clock.Advance(lease + time.Second)
	if err := d.Locks.Expire(ctx); err != nil {
		t.Fatal(err)
	}
	head := <-out
	if head.err != nil || head.node != "m1" || head.done == nil {
		t.Fatalf("queue head: %s done=%v err=%v; want m1 to claim the granted lock", head.node, head.done != nil, head.err)
	}
	if a, err := c.LockState(ctx, client.PullOp, res, "m1"); err != nil || a.Status != apitype.LockAcquired {
		t.Fatalf("m1 after Take: %+v %v; want acquired", a, err)
	}
	head.done(true) // the chunk is in the cache: done at once
	for range mounts - 1 {
		select {
		case w := <-out:
			if w.err != nil || w.done != nil {
				t.Fatalf("%s: done=%v err=%v; want woken to read the cache", w.node, w.done != nil, w.err)
			}
		case <-ctx.Done():
			t.Fatal("mounts behind the head still waiting")
		}
	}
}
