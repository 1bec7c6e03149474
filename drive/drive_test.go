package drive_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"netdisk/chunker"
	"netdisk/dedup"
	"netdisk/drive"
	"netdisk/drive/drivetest"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/testutil"
)

const testChunk = 1024

type fixture struct {
	d    *drive.Drive
	m    *meta.SQLStore
	dir  string
	a, b meta.User
}

func newFixture(t testing.TB) *fixture { return newFixtureChunk(t, testChunk) }

// newFixtureChunk is the daemon's drive (drivetest) cut at chunkSize, with the
// users alice and bob.
func newFixtureChunk(t testing.TB, chunkSize int64) *fixture {
	t.Helper()
	e := drivetest.New(t, drivetest.Options{ChunkSize: chunkSize})
	return &fixture{d: e.Drive, m: e.Meta, dir: e.Dir, a: e.AddUser(t, "alice", 0), b: e.AddUser(t, "bob", 0)}
}

func (f *fixture) put(t *testing.T, uid int64, p string, data []byte) meta.Node {
	t.Helper()
	w, err := f.d.Create(context.Background(), uid, p, drive.WriteOptions{ExpectedSize: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	// Write in odd-sized pieces so chunk cutting is exercised across calls.
	for off := 0; off < len(data); off += 333 {
		if _, err := w.Write(data[off:min(off+333, len(data))]); err != nil {
			t.Fatal(err)
		}
	}
	n, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *fixture) get(t *testing.T, uid int64, p string) []byte {
	t.Helper()
	r, err := f.d.Open(context.Background(), uid, p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func random(seed int64, n int) []byte { return testutil.RandomBytes(seed, n) }

// expectedHash computes the file hash independently of the chunker package.
func expectedHash(data []byte) string {
	h := md5.New()
	for off := 0; off < len(data); off += testChunk {
		c := md5.Sum(data[off:min(off+testChunk, len(data))])
		h.Write([]byte(hex.EncodeToString(c[:])))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestWriteReadRoundTripAtBoundaries(t *testing.T) {
	f := newFixture(t)
	for i, size := range []int{0, 1, testChunk - 1, testChunk, testChunk + 1, 5*testChunk + 17} {
		data := random(int64(i), size)
		n := f.put(t, f.a.ID, "/f", data)
		if n.Size != int64(size) || n.FileHash != expectedHash(data) {
			t.Fatalf("size %d: node %+v, want hash %s", size, n, expectedHash(data))
		}
		if got := f.get(t, f.a.ID, "/f"); !bytes.Equal(got, data) {
			t.Fatalf("size %d: read back differs", size)
		}
		cs, err := f.m.FileChunks(context.Background(), n.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := (size + testChunk - 1) / testChunk; len(cs) != want {
			t.Fatalf("size %d: %d chunks, want %d", size, len(cs), want)
		}
	}
}

func TestSegmentsAndSeek(t *testing.T) {
	f := newFixture(t)
	data := random(7, 3*testChunk+100)
	f.put(t, f.a.ID, "/s", data)
	r, err := f.d.Open(context.Background(), f.a.ID, "/s")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	segs := r.Segments(testChunk-10, testChunk+20) // 10 bytes, a whole chunk, 10 bytes
	if len(segs) != 3 || segs[0].Offset != testChunk-10 || segs[0].Length != 10 || segs[1].Offset != 0 ||
		segs[1].Length != testChunk || segs[2].Offset != 0 || segs[2].Length != 10 {
		t.Fatalf("segments %+v", segs)
	}
	if _, err := r.Seek(2*testChunk+5, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 50)
	if _, err := io.ReadFull(r, buf); err != nil || !bytes.Equal(buf, data[2*testChunk+5:2*testChunk+55]) {
		t.Fatalf("read after seek: %v", err)
	}
}

func TestAbortKeepsOldVersionAndNothingNew(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	old := random(1, 3000)
	f.put(t, f.a.ID, "/keep", old)
	for _, p := range []string{"/keep", "/new"} {
		w, err := f.d.Create(ctx, f.a.ID, p, drive.WriteOptions{ExpectedSize: -1})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(random(2, 2500))
		w.Abort()
	}
	if got := f.get(t, f.a.ID, "/keep"); !bytes.Equal(got, old) {
		t.Fatal("aborted write changed the old version")
	}
	if _, err := f.d.Stat(ctx, f.a.ID, "/new"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("aborted new file is visible: %v", err)
	}
}

func countBlobs(t *testing.T, dir string) int {
	n := 0
	filepath.Walk(filepath.Join(dir, "chunks"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && filepath.Base(filepath.Dir(p)) != "tmp" {
			n++
		}
		return nil
	})
	return n
}

func TestDedupAcrossUsersAndGC(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	data := random(3, 4*testChunk)
	f.put(t, f.a.ID, "/x", data)
	f.put(t, f.b.ID, "/y", data)
	f.put(t, f.a.ID, "/x2", data)
	if n := countBlobs(t, f.dir); n != 4 {
		t.Fatalf("%d blobs stored for 3 copies of a 4-chunk file, want 4", n)
	}
	st, _ := f.d.Stats(ctx)
	if st.LogicalBytes != 3*int64(len(data)) || st.PhysicalBytes != int64(len(data)) {
		t.Fatalf("stats %+v", st)
	}
	// Removing two of three references frees nothing.
	f.d.Remove(ctx, f.a.ID, "/x")
	f.d.Remove(ctx, f.a.ID, "/x2")
	if res, err := f.d.GC(ctx); err != nil || res.Chunks != 0 {
		t.Fatalf("GC freed live chunks: %+v %v", res, err)
	}
	if got := f.get(t, f.b.ID, "/y"); !bytes.Equal(got, data) {
		t.Fatal("bob's copy damaged")
	}
	// A reader holding the last version keeps its chunks alive through GC.
	r, err := f.d.Open(ctx, f.b.ID, "/y")
	if err != nil {
		t.Fatal(err)
	}
	f.d.Remove(ctx, f.b.ID, "/y")
	// Expunged from both trashes, nothing but the reader holds them.
	for _, u := range []int64{f.a.ID, f.b.ID} {
		if _, err := f.d.EmptyTrash(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if res, _ := f.d.GC(ctx); res.Chunks != 0 || res.SkippedInUse != 4 {
		t.Fatalf("GC under an open reader: %+v", res)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("reader lost its chunks: %v", err)
	}
	if res, _ := f.d.GC(ctx); res.Chunks != 4 {
		t.Fatalf("GC after close freed %+v, want 4 chunks", res)
	}
	if n := countBlobs(t, f.dir); n != 0 {
		t.Fatalf("%d blobs left", n)
	}
}

func TestGCRemovesOrphanBlobs(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// A crash between storing chunks and committing leaves blobs without records.
	blobs, err := dedup.NewDiskStore(filepath.Join(f.dir, "chunks"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		b := random(int64(40+i), testChunk)
		if err := blobs.Put(ctx, dedup.Key(chunker.HashChunk(b).SHA256), b); err != nil {
			t.Fatal(err)
		}
	}
	f.put(t, f.a.ID, "/live", random(50, testChunk))
	if n := countBlobs(t, f.dir); n != 4 {
		t.Fatalf("%d blobs, want 4", n)
	}
	res, err := f.d.GC(ctx)
	if err != nil || res.OrphanBlobs != 3 || countBlobs(t, f.dir) != 1 {
		t.Fatalf("orphans not collected: %+v %v", res, err)
	}
}

func TestQuotaRefusesAndChangesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// 5000 bytes of files and the entry of /a (meta/charge.go).
	if err := f.d.SetQuota(ctx, "alice", 5000+meta.EntryCharge("a")); err != nil {
		t.Fatal(err)
	}
	f.put(t, f.a.ID, "/a", random(5, 4000))
	if _, err := f.d.Create(ctx, f.a.ID, "/b", drive.WriteOptions{ExpectedSize: 2000}); !errs.Is(err, errs.Quota) {
		t.Fatalf("declared size over quota: %v", err)
	}
	w, _ := f.d.Create(ctx, f.a.ID, "/b", drive.WriteOptions{ExpectedSize: -1})
	w.Write(random(6, 2000))
	if _, err := w.Commit(); !errs.Is(err, errs.Quota) {
		t.Fatalf("commit over quota: %v", err)
	}
	if _, err := f.d.Stat(ctx, f.a.ID, "/b"); !errs.Is(err, errs.NotFound) {
		t.Fatal("refused file is visible")
	}
	if err := f.d.Copy(ctx, f.a.ID, "/a", "/a2", false, true); !errs.Is(err, errs.Quota) {
		t.Fatalf("copy over quota: %v", err)
	}
	q, _ := f.d.QuotaOf(ctx, f.a.ID)
	if q.Finished != 4000 || q.Metadata != meta.EntryCharge("a") {
		t.Fatalf("finished = %d, metadata %d; want 4000 and %d", q.Finished, q.Metadata, meta.EntryCharge("a"))
	}
	// Replacing a file with a smaller one fits.
	f.put(t, f.a.ID, "/a", random(7, 1000))
	if q, _ := f.d.QuotaOf(ctx, f.a.ID); q.Finished != 1000 {
		t.Fatalf("finished after shrink = %d", q.Finished)
	}
}

func TestTreeOpsAndIsolation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.d.MkdirAll(ctx, f.a.ID, "/d/e/f"))
	f.put(t, f.a.ID, "/d/e/f/file", []byte("deep"))
	f.put(t, f.a.ID, "/d0", []byte("sibling whose name sorts right after /d"))
	must(f.d.Move(ctx, f.a.ID, "/d", "/m", false))
	if got := f.get(t, f.a.ID, "/m/e/f/file"); string(got) != "deep" {
		t.Fatalf("after move: %q", got)
	}
	if _, err := f.d.Stat(ctx, f.a.ID, "/d0"); err != nil {
		t.Fatalf("move of /d touched /d0: %v", err)
	}
	if err := f.d.Move(ctx, f.a.ID, "/m", "/m/e/inside", false); !errs.Is(err, errs.Permission) {
		t.Fatalf("move into itself: %v", err)
	}
	must(f.d.Copy(ctx, f.a.ID, "/m", "/c", false, true))
	if got := f.get(t, f.a.ID, "/c/e/f/file"); string(got) != "deep" {
		t.Fatalf("after copy: %q", got)
	}
	if err := f.d.Copy(ctx, f.a.ID, "/m", "/c", false, true); !errs.Is(err, errs.Exists) {
		t.Fatalf("copy onto existing without overwrite: %v", err)
	}
	if _, err := f.d.Mkdir(ctx, f.a.ID, "/nope/x"); !errs.Is(err, errs.NoParent) {
		t.Fatalf("mkdir without parent: %v", err)
	}
	if _, err := f.d.Create(ctx, f.a.ID, "/d0/x", drive.WriteOptions{}); !errs.Is(err, errs.NotDir) {
		t.Fatalf("create under a file: %v", err)
	}
	if _, err := f.d.Stat(ctx, f.a.ID, "/../etc"); !errs.Is(err, errs.Invalid) {
		t.Fatalf("escaping path: %v", err)
	}
	// Bob sees none of it.
	if _, err := f.d.Stat(ctx, f.b.ID, "/m/e/f/file"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("bob sees alice's file: %v", err)
	}
	if ns, _ := f.d.List(ctx, f.b.ID, "/"); len(ns) != 0 {
		t.Fatalf("bob's root lists %d entries", len(ns))
	}
	must(f.d.Remove(ctx, f.a.ID, "/m"))
	if n, _ := f.d.CountTree(ctx, f.a.ID, "/", 100); n != 5 { // /d0, /c, /c/e, /c/e/f, /c/e/f/file
		t.Fatalf("CountTree after remove = %d", n)
	}
	q, _ := f.d.QuotaOf(ctx, f.a.ID)
	if want := int64(len("deep") + len("sibling whose name sorts right after /d")); q.Finished != want {
		t.Fatalf("finished = %d, want %d", q.Finished, want)
	}
}

func TestAuthenticate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.d.Authenticate(ctx, "alice", drivetest.Password("alice")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.Authenticate(ctx, "alice", drivetest.Password("alice")); err != nil {
		t.Fatal("cached check failed")
	}
	_, e1 := f.d.Authenticate(ctx, "alice", "wrong")
	_, e2 := f.d.Authenticate(ctx, "nobody", "wrong")
	if !errs.Is(e1, errs.Unauthenticated) || e1.Error() != e2.Error() {
		t.Fatalf("unknown user and wrong password must look the same: %v / %v", e1, e2)
	}
	if err := f.d.SetPassword(ctx, "alice", "new"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.Authenticate(ctx, "alice", drivetest.Password("alice")); err == nil {
		t.Fatal("old password still accepted after change (stale auth cache)")
	}
}

// A remembered credential answers without the store for authFresh (one
// second): a password changed behind this process's back (another node of a
// shared store) is refused once that has passed; one changed through this
// process at once.
func TestAuthenticateCachedFreshness(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	e := drivetest.New(t, drivetest.Options{Clock: clock})
	ctx := context.Background()
	alice := e.AddUser(t, "alice", 0)
	pass := drivetest.Password("alice")
	if _, ok := e.Drive.AuthenticateCached(ctx, "alice", pass); ok {
		t.Fatal("AuthenticateCached vouched for a password never verified")
	}
	if _, err := e.Drive.Authenticate(ctx, "alice", pass); err != nil {
		t.Fatal(err)
	}
	if u, ok := e.Drive.AuthenticateCached(ctx, "alice", pass); !ok || u.ID != alice.ID {
		t.Fatalf("remembered password refused: %+v %v", u, ok)
	}
	if _, ok := e.Drive.AuthenticateCached(ctx, "alice", "wrong"); ok {
		t.Fatal("AuthenticateCached vouched for a wrong password")
	}
	// Another node changes the password: the store only.
	h, err := drive.HashPassword("changed-elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Meta.SetPassword(ctx, alice.ID, h); err != nil {
		t.Fatal(err)
	}
	clock.Advance(999 * time.Millisecond)
	if _, ok := e.Drive.AuthenticateCached(ctx, "alice", pass); !ok {
		t.Fatal("within a second of its confirmation the remembered password should still answer")
	}
	clock.Advance(time.Millisecond)
	if _, ok := e.Drive.AuthenticateCached(ctx, "alice", pass); ok {
		t.Fatal("old password accepted a second after a change on another node")
	}
	// A change through this drive is seen at once, though the entry was
	// confirmed a moment ago.
	if _, err := e.Drive.Authenticate(ctx, "alice", "changed-elsewhere"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Drive.AuthenticateCached(ctx, "alice", "changed-elsewhere"); !ok {
		t.Fatal("just verified password refused")
	}
	if err := e.Drive.SetPassword(ctx, "alice", "changed-here"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Drive.AuthenticateCached(ctx, "alice", "changed-elsewhere"); ok {
		t.Fatal("old password accepted right after SetPassword (stale auth cache)")
	}
	if err := e.Drive.DeleteUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Drive.AuthenticateCached(ctx, "alice", "changed-here"); ok {
		t.Fatal("a deleted user's password still accepted")
	}
}

// On a store other nodes change (drive.Config.SharedMeta) a remembered
// credential is confirmed on every use: a password changed or a user
// deleted through another node is refused at the next request, with no
// time passing at all; a remembered password still skips bcrypt.
func TestAuthenticateCachedSharedStore(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	e := drivetest.New(t, drivetest.Options{Clock: clock, SharedMeta: true})
	ctx := context.Background()
	alice := e.AddUser(t, "alice", 0)
	pass := drivetest.Password("alice")
	if _, err := e.Drive.Authenticate(ctx, "alice", pass); err != nil {
		t.Fatal(err)
	}
	if u, ok := e.Drive.AuthenticateCached(ctx, "alice", pass); !ok || u.ID != alice.ID {
		t.Fatalf("remembered password refused: %+v %v", u, ok)
	}
	h, err := drive.HashPassword("changed-elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Meta.SetPassword(ctx, alice.ID, h); err != nil { // another node: the store only
		t.Fatal(err)
	}
	if _, ok := e.Drive.AuthenticateCached(ctx, "alice", pass); ok {
		t.Fatal("old password accepted at once after a change on another node")
	}
	if _, err := e.Drive.Authenticate(ctx, "alice", "changed-elsewhere"); err != nil {
		t.Fatal(err)
	}
	if err := e.Meta.DeleteUser(ctx, alice.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Drive.AuthenticateCached(ctx, "alice", "changed-elsewhere"); ok {
		t.Fatal("a user deleted on another node still accepted")
	}
}

func TestFsckFindsCorruptAndMissing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	n := f.put(t, f.a.ID, "/f", random(9, 2*testChunk))
	cs, _ := f.m.FileChunks(ctx, n.ID)
	blob := func(sha string) string { return filepath.Join(f.dir, "chunks", sha[:2], sha[2:4], sha) }
	os.WriteFile(blob(cs[0].SHA256), []byte("garbage"), 0o600)
	os.Remove(blob(cs[1].SHA256))
	res, err := f.d.Fsck(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 2 || res.Problems[0].Problem == res.Problems[1].Problem {
		t.Fatalf("fsck problems %+v", res.Problems)
	}
}
