package mount_test

import (
	"bytes"
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/mount"
	"netdisk/testutil"
)

// TestInterruptedFetchReturnsEINTR: a reader whose chunk fetch is held on
// the link and whose request is then interrupted (its ctx cancelled, as
// go-fuse does on FUSE_INTERRUPT) gets EINTR at once, while the shared
// fetch goes on and still serves the other reader waiting on it.
func TestInterruptedFetchReturnsEINTR(t *testing.T) {
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	ctx := context.Background()
	admin := client.New(d.URL, "admin", d.AdminPass)
	if _, err := admin.AdminAddUser(ctx, apitype.NewUser{Name: "alice", Password: "alice-pass"}); err != nil {
		t.Fatal(err)
	}
	data := testutil.RandBytes(testChunk)
	direct := client.New(d.URL, "alice", "alice-pass")
	if _, err := direct.Upload(ctx, "/held.bin", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	hp, front := newHoldProxy(t, d.URL)
	be := mount.NewHTTPBackend(client.New(front, "alice", "alice-pass"))
	cl, err := be.ChunkList(ctx, "/held.bin")
	if err != nil || len(cl.Chunks) != 1 {
		t.Fatalf("chunk list: %+v, %v", cl, err)
	}
	cache, err := mount.OpenChunkCache(filepath.Join(t.TempDir(), "cache"), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := mount.New(mount.Options{Backend: be, Cache: cache, StageDir: t.TempDir(),
		OpTimeout: time.Minute, UploadTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	hp.armFor("/dav/")

	type result struct {
		b   []byte
		err error
	}
	other := make(chan result, 1)
	go func() {
		b, err := fsys.Fetch(context.Background(), "/held.bin", cl.FileHash, cl.Chunks[0])
		other <- result{b, err}
	}()
	<-hp.entered // the shared fetch is now held in the proxy

	rctx, cancel := context.WithCancel(ctx)
	interrupted := make(chan error, 1)
	go func() {
		_, err := fsys.Fetch(rctx, "/held.bin", cl.FileHash, cl.Chunks[0])
		interrupted <- err
	}()
	cancel()
	select {
	case err := <-interrupted:
		if got := mount.Errno(err); got != syscall.EINTR {
			t.Fatalf("interrupted read: %v (%v), want EINTR", got, err)
		}
	case r := <-other:
		t.Fatalf("the held fetch finished (%v) before the interrupted reader returned", r.err)
	case <-time.After(20 * time.Second): // a guard against a hang, not a timing assumption
		t.Fatal("the interrupted reader waited for the held fetch")
	}
	select {
	case r := <-other:
		t.Fatalf("the held fetch finished (%v) while the proxy held it", r.err)
	default:
	}
	hp.open()
	r := <-other
	if r.err != nil || !bytes.Equal(r.b, data) {
		t.Fatalf("the other reader: %d bytes, %v", len(r.b), r.err)
	}
}
