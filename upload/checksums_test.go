package upload

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"io"
	"log/slog"
	"testing"
	"time"

	"netdisk/drive"
	"netdisk/drive/drivetest"
	"netdisk/testutil"
)

func sha1Hex(b []byte) string { s := sha1.Sum(b); return hex.EncodeToString(s[:]) }

// checkSums fails unless the file at path has b's MD5 and SHA-1 as its
// content checksums now.
func (e *env) checkSums(uid int64, path string, b []byte, when string) {
	e.t.Helper()
	st, err := e.d.Stat(context.Background(), uid, path)
	if err != nil || st.MD5 != testutil.MD5Hex(b) || st.SHA1 != sha1Hex(b) {
		e.t.Fatalf("%s: %s has MD5 %q SHA-1 %q (%v), want %s %s", when, path, st.MD5, st.SHA1, err, testutil.MD5Hex(b), sha1Hex(b))
	}
}

// pass runs one checksum pass and returns how many files it filled and how
// many bytes it read back from the chunk store.
func (e *env) pass() (filled int, read int64) {
	e.t.Helper()
	before := e.d.Progress().SumBytes
	n, err := e.d.FillChecksums(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return n, e.d.Progress().SumBytes - before
}

// startUpload opens a session for b at path.
func (e *env) startUpload(uid int64, path string, b []byte) string {
	e.t.Helper()
	info, err := e.s.Init(context.Background(), uid, path, int64(len(b)), "")
	if err != nil {
		e.t.Fatal(err)
	}
	return info.UploadID
}

func (e *env) merge(uid int64, id string, b []byte) {
	e.t.Helper()
	if _, err := e.s.Merge(context.Background(), uid, id, fileHash(b, testChunk), fileSHA(b, testChunk)); err != nil {
		e.t.Fatal(err)
	}
}

// Chunks sent in order give the file its content checksums in the merge's
// own commit: nothing is read back from the chunk store, no pass is needed.
// Sizes: one chunk, a short last chunk, whole chunks only.
func TestMergeInOrderHasChecksumsWithoutReading(t *testing.T) {
	e := newEnv(t)
	uid := e.user("carol", 0)
	for _, size := range []int{1, testChunk, 3*testChunk + 9, 4 * testChunk} {
		b := testutil.RandBytes(size)
		if _, err := e.upload(uid, "/m.bin", b); err != nil {
			t.Fatal(err)
		}
		e.checkSums(uid, "/m.bin", b, "right after the merge")
		if n, read := e.pass(); n != 0 || read != 0 {
			t.Fatalf("size %d: the pass filled %d files reading %d bytes, want none", size, n, read)
		}
	}
}

// Chunks out of order: the running sums stop at the first gap, and the pass
// reads back only the chunks after it. Chunks 0, 2, 1, 3, 4: the sums hold
// 0 and 1 (1 came next), 2 arrived before its turn, so 2, 3 and 4 are read.
// The last chunk first: only it is read. The first chunk last: all but it.
func TestMergeOutOfOrderReadsOnlyTheRest(t *testing.T) {
	e := newEnv(t)
	uid := e.user("carol", 0)
	b := testutil.RandBytes(4*testChunk + 100)
	for _, c := range []struct {
		order []int64
		read  int64
	}{
		{[]int64{0, 2, 1, 3, 4}, 2*testChunk + 100},
		{[]int64{4, 0, 1, 2, 3}, 100},
		{[]int64{1, 2, 3, 4, 0}, 3*testChunk + 100},
	} {
		id := e.startUpload(uid, "/o.bin", b)
		e.putChunks(uid, id, b, c.order...)
		e.merge(uid, id, b)
		if n, read := e.pass(); n != 1 || read != c.read {
			t.Fatalf("order %v: the pass filled %d files reading %d bytes, want 1 file, %d bytes", c.order, n, read, c.read)
		}
		e.checkSums(uid, "/o.bin", b, "after the pass")
	}
}

// Chunks sent at once (a client with several uploads in flight): a chunk
// that finishes while the one before it is still arriving waits for it, so
// the file still gets its checksums at the merge.
func TestMergeConcurrentChunksKeepOrder(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	uid := e.user("carol", 0)
	b := testutil.RandBytes(3 * testChunk)
	id := e.startUpload(uid, "/c.bin", b)
	pr, pw := io.Pipe()
	first := make(chan error, 1)
	go func() {
		c := chunkOf(b, 0)
		first <- e.s.PutChunk(ctx, uid, id, 0, testutil.MD5Hex(c), pr, int64(len(c)))
	}()
	// The first byte is taken: chunk 0 is being received.
	if _, err := pw.Write(chunkOf(b, 0)[:1]); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		c := chunkOf(b, 1)
		second <- e.s.PutChunk(ctx, uid, id, 1, testutil.MD5Hex(c), bytes.NewReader(c), int64(len(c)))
	}()
	// Chunk 1 is stored and recorded while chunk 0 is still arriving; it
	// does not answer before chunk 0 ends.
	for {
		if _, ok, err := e.m.SessionChunkAt(ctx, id, 1); err != nil {
			t.Fatal(err)
		} else if ok {
			break
		}
		select {
		case err := <-second:
			t.Fatalf("chunk 1 answered (%v) while chunk 0 was still arriving", err)
		case <-time.After(time.Millisecond):
		}
	}
	select {
	case err := <-second:
		t.Fatalf("chunk 1 answered (%v) while chunk 0 was still arriving", err)
	default:
	}
	if _, err := pw.Write(chunkOf(b, 0)[1:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	e.putChunks(uid, id, b, 2)
	e.merge(uid, id, b)
	e.checkSums(uid, "/c.bin", b, "right after the merge")
	if n, read := e.pass(); n != 0 || read != 0 {
		t.Fatalf("the pass filled %d files reading %d bytes, want none", n, read)
	}
}

// A chunk the client does not send because the user holds it (patchHash
// with its SHA-256) is a gap: the pass reads from there on.
func TestMergeDeduplicatedChunkChecksums(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	uid := e.user("carol", 0)
	held := testutil.RandBytes(testChunk)
	if _, err := e.upload(uid, "/held.bin", held); err != nil {
		t.Fatal(err)
	}
	b := append(testutil.RandBytes(testChunk), held...)
	b = append(b, testutil.RandBytes(testChunk/2)...)
	id := e.startUpload(uid, "/d.bin", b)
	e.putChunks(uid, id, b, 0)
	r, err := e.s.PatchChunk(ctx, uid, id, 1, testutil.MD5Hex(held), sha256hex(held))
	if err != nil || !r.Exists {
		t.Fatalf("patchHash of a held chunk: %+v %v", r, err)
	}
	e.putChunks(uid, id, b, 2)
	e.merge(uid, id, b)
	if n, read := e.pass(); n != 1 || read != testChunk+testChunk/2 {
		t.Fatalf("the pass filled %d files reading %d bytes, want 1 file, %d bytes", n, read, testChunk+testChunk/2)
	}
	e.checkSums(uid, "/d.bin", b, "after the pass")
}

// The running sums live in the process: after a restart a session's chunks
// resume, the merge has no checksums, and the pass reads the whole file.
func TestMergeAfterRestartChecksums(t *testing.T) {
	ctx := context.Background()
	clock := testutil.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	open := func(te *drivetest.Env) *env {
		c := Config{Drive: te.Drive, DB: te.Meta, TTL: time.Hour, MergedRetention: time.Hour, Now: clock.Now,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		s := New(c)
		if err := te.Reconcile(ctx, te.Drive); err != nil {
			t.Fatal(err)
		}
		return &env{t: t, clock: clock, m: te.Meta, blobs: te.Blobs, d: te.Drive, s: s, g: te.Quota}
	}
	te := drivetest.New(t, drivetest.Options{ChunkSize: testChunk, Clock: clock})
	e := open(te)
	uid := e.user("carol", 0)
	b := testutil.RandBytes(3*testChunk + 1)
	id := e.startUpload(uid, "/r.bin", b)
	e.putChunks(uid, id, b, 0, 1)
	te.Close()

	l, err := drive.OpenLocal(ctx, drive.LocalConfig{Config: drive.Config{ChunkSize: testChunk, Now: clock.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, Dir: te.Dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	e = open(&drivetest.Env{Local: l, Dir: te.Dir, Clock: clock})
	info, err := e.s.Init(ctx, uid, "/r.bin", int64(len(b)), "")
	if err != nil || info.UploadID != id || len(info.Uploaded) != 2 {
		t.Fatalf("resume after the restart: %+v %v", info, err)
	}
	e.putChunks(uid, id, b, 2, 3)
	e.merge(uid, id, b)
	if n, read := e.pass(); n != 1 || read != int64(len(b)) {
		t.Fatalf("the pass filled %d files reading %d bytes, want 1 file, %d bytes", n, read, len(b))
	}
	e.checkSums(uid, "/r.bin", b, "after the pass")
}

// A merge that leaves checksums to the pass wakes it.
func TestMergeWakesThePass(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	uid := e.user("carol", 0)
	done := make(chan int)
	go e.d.RunChecksums(ctx, time.Hour, done)
	if n := <-done; n != 0 { // the pass at start: nothing pending yet
		t.Fatalf("first pass filled %d", n)
	}
	b := testutil.RandBytes(3*testChunk + 9)
	id := e.startUpload(uid, "/m.bin", b)
	e.putChunks(uid, id, b, 1, 0, 2, 3)
	e.merge(uid, id, b)
	if n := <-done; n != 1 { // woken by the merge: the timer is an hour away
		t.Fatalf("pass after the merge filled %d, want 1", n)
	}
	e.checkSums(uid, "/m.bin", b, "after the pass")
}
