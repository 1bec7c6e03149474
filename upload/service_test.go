package upload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/chunker"
	"netdisk/dedup"
	"netdisk/drive"
	"netdisk/drive/drivetest"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/quota"
	"netdisk/testutil"
)

const testChunk = 1024

type env struct {
	t     testing.TB
	clock *testutil.Clock
	m     *meta.SQLStore
	blobs dedup.BlobStore
	d     *drive.Drive
	s     *Service
	g     *quota.Guard
}

// newEnv wires the service as the daemon does, on the embedded ledger.
func newEnv(t *testing.T) *env { return newEnvWith(t, nil) }

// newEnvWith wires it on rdb's Redis ledger (nil: embedded): the test drive
// (drivetest, opened as the daemon opens its data directory) with the service
// as the ledger's truth, and the instant upload policy inst (the zero value:
// the daemon's default).
func newEnvWith(t testing.TB, rdb *redis.Client, inst ...Instant) *env {
	t.Helper()
	return newEnvSized(t, testChunk, rdb, inst...)
}

// newEnvSized is newEnvWith with chunks of cs bytes.
func newEnvSized(t testing.TB, cs int64, rdb *redis.Client, inst ...Instant) *env {
	t.Helper()
	clock := testutil.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	te := drivetest.New(t, drivetest.Options{ChunkSize: cs, Clock: clock, Redis: rdb})
	c := Config{Drive: te.Drive, DB: te.Meta, TTL: time.Hour, MergedRetention: time.Hour, Now: clock.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if len(inst) > 0 {
		c.Instant = inst[0]
	}
	s := New(c)
	if err := te.Reconcile(context.Background(), te.Drive); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, clock: clock, m: te.Meta, blobs: te.Blobs, d: te.Drive, s: s, g: te.Quota}
}

func (e *env) user(name string, quota int64) int64 {
	e.t.Helper()
	u, err := e.d.AddUser(context.Background(), name, "pw-"+name, false, quota)
	if err != nil {
		e.t.Fatal(err)
	}
	return u.ID
}

func sha256hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// fileSHA is b's chunker.FileSHA256, cut at cs.
func fileSHA(b []byte, cs int) string {
	var hs []string
	for off := 0; off < len(b); off += cs {
		hs = append(hs, sha256hex(b[off:min(off+cs, len(b))]))
	}
	return chunker.FileSHA256(hs)
}

func fileHash(b []byte, cs int) string {
	var hs []string
	for off := 0; off < len(b); off += cs {
		hs = append(hs, testutil.MD5Hex(b[off:min(off+cs, len(b))]))
	}
	return chunker.FileHash(hs)
}

func chunkOf(b []byte, i int64) []byte {
	return b[i*testChunk : min((i+1)*testChunk, int64(len(b)))]
}

// upload sends every chunk and merges.
func (e *env) upload(uid int64, path string, b []byte) (Result, error) {
	ctx := context.Background()
	info, err := e.s.Init(ctx, uid, path, int64(len(b)), "")
	if err != nil {
		return Result{}, err
	}
	for i := int64(0); i < info.TotalChunks; i++ {
		c := chunkOf(b, i)
		if err := e.s.PutChunk(ctx, uid, info.UploadID, i, testutil.MD5Hex(c), bytes.NewReader(c), int64(len(c))); err != nil {
			return Result{}, err
		}
	}
	return e.s.Merge(ctx, uid, info.UploadID, fileHash(b, testChunk), fileSHA(b, testChunk))
}

// putChunks sends the chunks of b with the given indexes to session id,
// correctly hashed, their size not announced.
func (e *env) putChunks(uid int64, id string, b []byte, idx ...int64) {
	e.t.Helper()
	for _, i := range idx {
		c := chunkOf(b, i)
		if err := e.s.PutChunk(context.Background(), uid, id, i, testutil.MD5Hex(c), bytes.NewReader(c), -1); err != nil {
			e.t.Fatalf("chunk %d: %v", i, err)
		}
	}
}

func (e *env) read(uid int64, path string) []byte {
	e.t.Helper()
	r, err := e.d.Open(context.Background(), uid, path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *env) unfinished(uid int64) int64 {
	q, err := e.d.QuotaOf(context.Background(), uid)
	if err != nil {
		e.t.Fatal(err)
	}
	return q.Unfinished
}

func TestJanitorExpiresIdleSessions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	uid := e.user("alice", 0)
	b := testutil.RandBytes(3*testChunk + 10)
	info, err := e.s.Init(ctx, uid, "/a.bin", int64(len(b)), "")
	if err != nil {
		t.Fatal(err)
	}
	e.putChunks(uid, info.UploadID, b, 0, 3)
	if got := e.unfinished(uid); got != testChunk+10 {
		t.Fatalf("unfinished = %d, want %d", got, testChunk+10)
	}
	// Not idle long enough: the janitor leaves it and init resumes it.
	e.clock.Advance(59 * time.Minute)
	if n, err := e.s.Expire(ctx); err != nil || n != 0 {
		t.Fatalf("Expire = %d, %v; want 0", n, err)
	}
	again, err := e.s.Init(ctx, uid, "/a.bin", int64(len(b)), "")
	if err != nil || again.UploadID != info.UploadID || len(again.Uploaded) != 2 {
		t.Fatalf("resume = %+v, %v", again, err)
	}
	e.clock.Advance(time.Hour + time.Second)
	if _, err := e.s.Get(ctx, uid, info.UploadID); !errs.Is(err, errs.NotFound) {
		t.Fatalf("Get after TTL: %v, want NotFound", err)
	}
	if n, err := e.s.Expire(ctx); err != nil || n != 1 {
		t.Fatalf("Expire = %d, %v; want 1", n, err)
	}
	if got := e.unfinished(uid); got != 0 {
		t.Fatalf("unfinished after expiry = %d", got)
	}
	res, err := e.d.GC(ctx)
	if err != nil || res.Chunks != 2 {
		t.Fatalf("GC = %+v, %v; want 2 chunks collected", res, err)
	}
}

func TestMergedSessionIsIdempotentThenRetired(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	uid := e.user("bob", 0)
	b := testutil.RandBytes(2*testChunk + 1)
	info, _ := e.s.Init(ctx, uid, "/x/y/z.bin", int64(len(b)), "")
	e.putChunks(uid, info.UploadID, b, 0, 1, 2)
	fh := fileHash(b, testChunk)
	r1, err := e.s.Merge(ctx, uid, info.UploadID, fh, "")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := e.s.Merge(ctx, uid, info.UploadID, fh, "")
	if err != nil || r1 != r2 {
		t.Fatalf("retried merge = %+v, %v; want %+v", r2, err, r1)
	}
	if !bytes.Equal(e.read(uid, "/x/y/z.bin"), b) {
		t.Fatal("content differs")
	}
	if u := e.unfinished(uid); u != 0 {
		t.Fatalf("unfinished after merge = %d", u)
	}
	e.clock.Advance(2 * time.Hour)
	if n, err := e.s.Expire(ctx); err != nil || n != 1 {
		t.Fatalf("Expire = %d, %v", n, err)
	}
	// The file keeps its chunks once the session is gone.
	if res, err := e.d.GC(ctx); err != nil || res.Chunks != 0 {
		t.Fatalf("GC = %+v, %v", res, err)
	}
	if !bytes.Equal(e.read(uid, "/x/y/z.bin"), b) {
		t.Fatal("content differs after GC")
	}
}

// A stored chunk whose MD5 equals that of other bytes must never stand in for
// them: the crafted entry claims MD5(x) but holds y.
func TestMD5CollisionCraftedEntry(t *testing.T) {
	// Shared mode: mallory alone must be enough to be offered a challenge.
	e := newEnvWith(t, nil, Instant{Mode: InstantShared})
	ctx := context.Background()
	alice, mallory, carol := e.user("alice", 0), e.user("mallory", 0), e.user("carol", 0)
	x, y := testutil.RandBytes(testChunk), testutil.RandBytes(testChunk)
	ySum := chunker.HashChunk(y)
	if err := e.blobs.Put(ctx, dedup.Key(ySum.SHA256), y); err != nil {
		t.Fatal(err)
	}
	// Mallory's file references the crafted record {sha256(y), md5(x)}.
	crafted := meta.Chunk{SHA256: ySum.SHA256, MD5: testutil.MD5Hex(x), Size: testChunk}
	if _, err := e.m.CommitFile(ctx, mallory, "/evil", meta.NewFile{Size: testChunk, FileHash: chunker.FileHash([]string{testutil.MD5Hex(x)}), Chunks: []meta.Chunk{crafted}}); err != nil {
		t.Fatal(err)
	}

	// Named by MD5 alone or by its real SHA-256, alice's x is not the
	// crafted record's bytes: no challenge, she sends the bytes.
	info, _ := e.s.Init(ctx, alice, "/x.bin", testChunk, "")
	for _, sha := range []string{"", sha256hex(x)} {
		hr, err := e.s.PatchChunk(ctx, alice, info.UploadID, 0, testutil.MD5Hex(x), sha)
		if err != nil || hr.Exists {
			t.Fatalf("patchHash (sha256 %q) = %+v, %v; want exists=false", sha, hr, err)
		}
	}
	if err := e.s.PutChunk(ctx, alice, info.UploadID, 0, testutil.MD5Hex(x), bytes.NewReader(x), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Merge(ctx, alice, info.UploadID, fileHash(x, testChunk), fileSHA(x, testChunk)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e.read(alice, "/x.bin"), x) {
		t.Fatal("alice's file does not hold her bytes")
	}
	cs, _ := e.m.ChunksByMD5(ctx, testutil.MD5Hex(x))
	if len(cs) != 2 {
		t.Fatalf("%d chunk records share the MD5, want 2 (stored by SHA-256)", len(cs))
	}
	// Two stored chunks share the MD5: the SHA-256 picks the one carol
	// names (a challenge over alice's x), and MD5 alone picks none.
	info2, _ := e.s.Init(ctx, carol, "/c.bin", testChunk, "")
	if hr, err := e.s.PatchChunk(ctx, carol, info2.UploadID, 0, testutil.MD5Hex(x), ""); err != nil || hr.Exists {
		t.Fatalf("carol's patchHash by MD5 = %+v, %v; want exists=false", hr, err)
	}
	hr, err := e.s.PatchChunk(ctx, carol, info2.UploadID, 0, testutil.MD5Hex(x), sha256hex(x))
	if err != nil || hr.Challenge == nil {
		t.Fatalf("carol's patchHash by SHA-256 = %+v, %v; want a challenge", hr, err)
	}
	idx := int64(0)
	if pr, err := e.s.Prove(ctx, carol, info2.UploadID, &idx, hr.Challenge.Nonce, proveOver(hr.Challenge, x)); err != nil || !pr.OK {
		t.Fatalf("carol's proof = %+v, %v", pr, err)
	}
	if _, err := e.s.Merge(ctx, carol, info2.UploadID, fileHash(x, testChunk), fileSHA(x, testChunk)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e.read(carol, "/c.bin"), x) {
		t.Fatal("carol's file does not hold her bytes")
	}
	if !bytes.Equal(e.read(mallory, "/evil"), y) {
		t.Fatal("mallory's file changed")
	}
}

// GC runs in a loop while many sessions upload (sharing chunks) and merge or
// abort; every merged file must read back intact and fsck must be clean.
func TestGCRacesUploads(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	shared := testutil.RandBytes(testChunk)
	stop := make(chan struct{})
	var gcRuns atomic.Int64
	var gcWG sync.WaitGroup
	gcWG.Add(1)
	go func() {
		defer gcWG.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := e.d.GC(ctx); err != nil {
				t.Error(err)
				return
			}
			gcRuns.Add(1)
		}
	}()
	type file struct {
		uid  int64
		path string
		b    []byte
	}
	var mu sync.Mutex
	var files []file
	var wg sync.WaitGroup
	for w := range 4 {
		uid := e.user("u"+string(rune('a'+w)), 0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				b := append(append(testutil.RandBytes(testChunk), shared...), testutil.RandBytes(100)...)
				path := "/f" + string(rune('0'+i))
				if i%3 == 2 { // an abandoned session leaves garbage behind
					info, err := e.s.Init(ctx, uid, path+".tmp", int64(len(b)), "")
					if err == nil {
						c := chunkOf(b, 1)
						e.s.PutChunk(ctx, uid, info.UploadID, 1, testutil.MD5Hex(c), bytes.NewReader(c), -1)
						err = e.s.Abort(ctx, uid, info.UploadID)
					}
					if err != nil {
						t.Error(err)
					}
					continue
				}
				// Instant-claim the shared chunk when this user already holds it.
				if _, err := e.upload(uid, path, b); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				files = append(files, file{uid, path, b})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	gcWG.Wait()
	if _, err := e.d.GC(ctx); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !bytes.Equal(e.read(f.uid, f.path), f.b) {
			t.Fatalf("%d:%s differs after GC", f.uid, f.path)
		}
	}
	fr, err := e.d.Fsck(ctx, nil)
	if err != nil || len(fr.Problems) != 0 {
		t.Fatalf("fsck = %+v, %v", fr, err)
	}
	t.Logf("%d GC runs during %d uploads", gcRuns.Load(), len(files))
}

// A chunk claimed by patchHash from the user's own file survives the file's
// deletion and a GC before merge: the session references it.
func TestClaimedChunkSurvivesGC(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	uid := e.user("dora", 0)
	b := testutil.RandBytes(testChunk + 5)
	// Written as WebDAV PUT does, so no session references its chunks.
	w, err := e.d.Create(ctx, uid, "/orig", drive.WriteOptions{ExpectedSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	info, _ := e.s.Init(ctx, uid, "/copy", int64(len(b)), "")
	for i := int64(0); i < 2; i++ {
		hr, err := e.s.PatchChunk(ctx, uid, info.UploadID, i, testutil.MD5Hex(chunkOf(b, i)), sha256hex(chunkOf(b, i)))
		if err != nil || !hr.Exists || hr.Challenge != nil {
			t.Fatalf("patchHash %d = %+v, %v; want exists without challenge", i, hr, err)
		}
	}
	if err := e.d.Remove(ctx, uid, "/orig"); err != nil {
		t.Fatal(err)
	}
	if res, err := e.d.GC(ctx); err != nil || res.Chunks != 0 {
		t.Fatalf("GC = %+v, %v; want nothing collected", res, err)
	}
	if _, err := e.s.Merge(ctx, uid, info.UploadID, fileHash(b, testChunk), fileSHA(b, testChunk)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e.read(uid, "/copy"), b) {
		t.Fatal("content differs")
	}
}

func TestQuotaAdmissionAndChunkLimit(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	uid := e.user("erin", 3*testChunk)
	if _, err := e.s.Init(ctx, uid, "/big", 4*testChunk, ""); !errs.Is(err, errs.Quota) {
		t.Fatalf("init over quota: %v, want Quota", err)
	}
	// Sessions reserve their declared size at init: two that together exceed
	// the quota cannot both be admitted, however their chunks interleave.
	a, err := e.s.Init(ctx, uid, "/a", 2*testChunk, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Init(ctx, uid, "/b", 2*testChunk, ""); !errs.Is(err, errs.Quota) {
		t.Fatalf("second init: %v, want Quota", err)
	}
	bb, err := e.s.Init(ctx, uid, "/b", testChunk, "")
	if err != nil {
		t.Fatal(err)
	}
	put := func(id string, i int64) error {
		c := testutil.RandBytes(testChunk)
		return e.s.PutChunk(ctx, uid, id, i, testutil.MD5Hex(c), bytes.NewReader(c), -1)
	}
	for _, p := range []struct {
		id string
		i  int64
	}{{a.UploadID, 0}, {a.UploadID, 1}, {bb.UploadID, 0}} {
		if err := put(p.id, p.i); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.s.Abort(ctx, uid, bb.UploadID); err != nil {
		t.Fatal(err)
	}
	if got := e.unfinished(uid); got != 2*testChunk {
		t.Fatalf("unfinished = %d, want %d", got, 2*testChunk)
	}
}

// List gives a user their own open sessions, newest first, with what each
// holds and when it expires; an expired one is gone from it before the
// janitor runs, as from Get; an aborted or merged one is gone at once.
func TestListOpenSessions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	alice, bob := e.user("alice", 0), e.user("bob", 0)
	b := testutil.RandBytes(3*testChunk + 10)
	first, err := e.s.Init(ctx, alice, "/a.bin", int64(len(b)), "")
	if err != nil {
		t.Fatal(err)
	}
	e.putChunks(alice, first.UploadID, b, 0, 3)
	e.clock.Advance(30 * time.Minute)
	second, err := e.s.Init(ctx, alice, "/b.bin", 5, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Init(ctx, bob, "/c.bin", 7, ""); err != nil {
		t.Fatal(err)
	}
	open, err := e.s.List(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want := []Open{
		{UploadID: second.UploadID, Path: "/b.bin", Size: 5, Touched: t0.Add(30 * time.Minute), Expires: t0.Add(90 * time.Minute)},
		{UploadID: first.UploadID, Path: "/a.bin", Size: int64(len(b)), Received: testChunk + 10, Touched: t0, Expires: t0.Add(time.Hour)},
	}
	for i := range open { // the store's times are in the local zone
		open[i].Touched, open[i].Expires = open[i].Touched.UTC(), open[i].Expires.UTC()
	}
	if fmt.Sprint(open) != fmt.Sprint(want) {
		t.Fatalf("List(alice) = %+v\nwant %+v", open, want)
	}
	e.clock.Advance(30*time.Minute + time.Second)
	if open, _ := e.s.List(ctx, alice); len(open) != 1 || open[0].UploadID != second.UploadID {
		t.Fatalf("List after the first expired = %+v", open)
	}
	if err := e.s.Abort(ctx, alice, second.UploadID); err != nil {
		t.Fatal(err)
	}
	if open, err := e.s.List(ctx, alice); err != nil || len(open) != 0 {
		t.Fatalf("List after abort = %+v %v", open, err)
	}
}
