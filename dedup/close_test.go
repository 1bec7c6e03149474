package dedup_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"netdisk/dedup"
	"netdisk/testutil"
)

// Closing the read cache while its read-ahead and a fetch its reader left
// hang on S3 (and hold the chunk's pull lock in Redis) cancels them and
// waits: no goroutine of the cache is left once Close returns, so none
// calls the lock service after it closes. Reads that miss fail after Close.
func TestS3CacheCloseEndsFetches(t *testing.T) {
	remote := openS3(t)
	nodes, _ := newNodes(t, 1, remote, t.TempDir())
	c, g := nodes[0].cache, nodes[0].remote
	var keys []dedup.Key
	for i := range 4 {
		b := bytes.Repeat([]byte(fmt.Sprintf("closing chunk %d ", i)), 5000)
		k := sha(b)
		if err := remote.Put(context.Background(), k, b); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	// A reader that gives up leaves its shared fetch running.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Open(ctx, keys[3])
		done <- err
	}()
	<-g.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned read: %v, want context.Canceled", err)
	}
	c.Prefetch(keys[:3]) // read-ahead of the first three, held at the gate
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.NoGoroutines(t, "netdisk/dedup.")
	if _, err := c.Open(context.Background(), keys[0]); err == nil {
		t.Fatal("a miss after Close read the chunk")
	}
}

// Closing the disk store while Puts are in flight waits for the spare temp
// file being made and removes the one left waiting: no goroutine of the
// store and no spare outlive Close.
func TestDiskStoreCloseEndsSpareRefill(t *testing.T) {
	dir := t.TempDir()
	s, err := dedup.NewDiskStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 16)
	for i := range cap(errc) {
		go func() {
			b := []byte(fmt.Sprintf("blob %d", i))
			errc <- s.Put(context.Background(), sha(b), b)
		}()
	}
	for range cap(errc) {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.NoGoroutines(t, "netdisk/dedup.")
	left, err := filepath.Glob(filepath.Join(dir, "tmp", "*"))
	if err != nil || len(left) > 0 {
		t.Fatalf("temp files left after Close: %v %v", left, err)
	}
}
