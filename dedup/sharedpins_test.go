package dedup_test

import (
	"context"
	"testing"
	"time"

	"netdisk/dedup"
	"netdisk/testutil"
)

// A chunk pinned on node A is safe from node B's GC; once A unpins, B's GC
// takes it; and A pinning while B is deleting waits for the deletion to
// finish, so A's existence check after Pin sees the chunk gone.
func TestSharedPinsAcrossNodes(t *testing.T) {
	r := testutil.StartRedis(t)
	a := dedup.NewSharedPins(r.Client(), "node-a", nil)
	b := dedup.NewSharedPins(r.Client(), "node-b", nil)
	k := sha([]byte("chunk"))
	ctx := context.Background()

	a.Pin(ctx, k)
	a.Pin(ctx, k) // two uploads on A
	ran, err := b.IfUnpinned(ctx, k, func() error { return nil })
	if err != nil || ran {
		t.Fatalf("B's GC ran on a chunk A pinned: %v, %v", ran, err)
	}
	a.Unpin(ctx, k)
	if ran, _ := b.IfUnpinned(ctx, k, func() error { return nil }); ran {
		t.Fatal("B's GC ran while A still holds one pin")
	}
	a.Unpin(ctx, k)
	if ran, err := b.IfUnpinned(ctx, k, func() error { return nil }); err != nil || !ran {
		t.Fatalf("B's GC skipped an unpinned chunk: %v, %v", ran, err)
	}

	// B deletes; A pins meanwhile and must not return before B is done.
	deleting, release := make(chan struct{}), make(chan struct{})
	gcDone := make(chan bool)
	go func() {
		ran, _ := b.IfUnpinned(ctx, k, func() error {
			close(deleting)
			<-release
			return nil
		})
		gcDone <- ran
	}()
	<-deleting
	pinned := make(chan struct{})
	go func() {
		a.Pin(ctx, k)
		close(pinned)
	}()
	select {
	case <-pinned:
		t.Fatal("A's Pin returned while B was deleting the chunk")
	case <-time.After(100 * time.Millisecond): // a pin that wrongly returns does so within milliseconds
	}
	close(release)
	if !<-gcDone {
		t.Fatal("B's GC did not run")
	}
	<-pinned
	if ran, _ := b.IfUnpinned(ctx, k, func() error { return nil }); ran {
		t.Fatal("B's GC ran on a chunk A pinned after the deletion")
	}
	a.Unpin(ctx, k)

	// A node that dies holding a pin leaves a live lease: GC still waits.
	c := dedup.NewSharedPins(r.Client(), "node-c", nil)
	c.Pin(ctx, k) // and node-c is never heard of again
	if ran, _ := b.IfUnpinned(ctx, k, func() error { return nil }); ran {
		t.Fatal("B's GC ran on a chunk a dead node pinned within its lease")
	}

	// Redis gone: GC deletes nothing.
	c.Unpin(ctx, k)
	r.Kill()
	if ran, err := b.IfUnpinned(ctx, k, func() error { return nil }); ran || err == nil {
		t.Fatalf("GC with Redis down: ran %v, err %v; want refused with an error", ran, err)
	}
}

// A Pin waiting for another node's GC deletion ends with its ctx, and its
// reference is dropped again by Unpin: B's GC then runs.
func TestSharedPinWaitEndsWithCtx(t *testing.T) {
	r := testutil.StartRedis(t)
	a := dedup.NewSharedPins(r.Client(), "node-a", nil)
	b := dedup.NewSharedPins(r.Client(), "node-b", nil)
	k := sha([]byte("chunk"))
	deleting, release := make(chan struct{}), make(chan struct{})
	gcDone := make(chan bool)
	go func() {
		ran, _ := b.IfUnpinned(context.Background(), k, func() error {
			close(deleting)
			<-release
			return nil
		})
		gcDone <- ran
	}()
	<-deleting
	ctx, cancel := context.WithCancel(context.Background())
	pinned := make(chan struct{})
	go func() {
		a.Pin(ctx, k)
		close(pinned)
	}()
	cancel()
	select {
	case <-pinned:
	case <-time.After(10 * time.Second): // the deletion marker's whole TTL is longer
		t.Fatal("a cancelled Pin still waits for the deletion")
	}
	close(release)
	<-gcDone
	a.Unpin(ctx, k)
	if ran, err := b.IfUnpinned(context.Background(), k, func() error { return nil }); err != nil || !ran {
		t.Fatalf("GC after the cancelled pin was dropped: ran %v, err %v", ran, err)
	}
}
