package drive_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"netdisk/chunker"
	"netdisk/drive"
	"netdisk/drive/drivetest"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/testutil"
)

// versionCount returns how many versions file p has.
func (f *fixture) versions(t *testing.T, uid int64, p string) []meta.Version {
	t.Helper()
	_, vs, err := f.d.FileVersions(context.Background(), uid, p)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// readVersion reads version vid of p whole, and from off on.
func (f *fixture) readVersion(t *testing.T, uid int64, p string, vid, off int64) []byte {
	t.Helper()
	r, _, err := f.d.OpenFileVersion(context.Background(), uid, p, vid)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Seek(off, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// instantSums names data as PutFile's instant path wants it: the file hash and the
// file SHA-256 of its chunks cut at testChunk.
func instantSums(data []byte) (fileHash, fileSHA string) {
	var md5s, shas []string
	for off := 0; off < len(data); off += testChunk {
		s := chunker.HashChunk(data[off:min(off+testChunk, len(data))])
		md5s, shas = append(md5s, s.MD5), append(shas, s.SHA256)
	}
	return chunker.FileHash(md5s), chunker.FileSHA256(shas)
}

// TestEveryContentChangeKeepsOneVersion drives each path of the drive that
// replaces a file's content — the streaming Writer (WebDAV PUT, the mount's
// upload), PutFile, its instant commit, a file moved over the file (an
// editor's save) and one copied over it — and wants exactly one version
// from each, with the replaced bytes readable; a rename, a touch and the
// same bytes again add none.
func TestEveryContentChangeKeepsOneVersion(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	uid := f.a.ID
	v0, v1 := random(1, 3*testChunk+5), random(2, 2*testChunk)
	f.put(t, uid, "/f", v0)
	want := [][]byte{v0} // the versions' contents, oldest first
	check := func(step string) {
		t.Helper()
		vs := f.versions(t, uid, "/f")
		if len(vs) != len(want) {
			t.Fatalf("%s: %d versions, want %d", step, len(vs), len(want))
		}
		// Newest first: the last replaced content is vs[0].
		if got := f.readVersion(t, uid, "/f", vs[0].ID, 0); !bytes.Equal(got, want[len(want)-1]) {
			t.Fatalf("%s: the newest version holds %d other bytes", step, len(got))
		}
		if vs[0].Author != uid {
			t.Fatalf("%s: author %d", step, vs[0].Author)
		}
	}
	f.put(t, uid, "/f", v1) // Writer
	check("a write over the file")
	f.put(t, uid, "/f", v1)
	check("the same bytes again")

	v2 := random(3, testChunk+1)
	if _, _, err := f.d.PutFile(ctx, uid, "/f", drive.PutOptions{Size: int64(len(v2))}, bytes.NewReader(v2)); err != nil {
		t.Fatal(err)
	}
	want = append(want, v1)
	check("PutFile")

	// The instant path: content uid holds elsewhere, committed unread.
	v3 := random(4, 2*testChunk+7)
	f.put(t, uid, "/other", v3)
	h, sha := instantSums(v3)
	if _, instant, err := f.d.PutFile(ctx, uid, "/f", drive.PutOptions{Size: int64(len(v3)), FileHash: h, FileSHA256: sha}, eofReader{}); err != nil || !instant {
		t.Fatalf("instant PutFile = %v, %v", instant, err)
	}
	want = append(want, v2)
	check("an instant commit")

	// An editor's save: a temporary file renamed over the file.
	v4 := random(5, testChunk)
	f.put(t, uid, "/.f.tmp", v4)
	if err := f.d.Move(ctx, uid, "/.f.tmp", "/f", true); err != nil {
		t.Fatal(err)
	}
	want = append(want, v3)
	check("a rename over the file")

	v5 := random(6, 5)
	f.put(t, uid, "/g", v5)
	if err := f.d.Copy(ctx, uid, "/g", "/f", true, false); err != nil {
		t.Fatal(err)
	}
	want = append(want, v4)
	check("a copy over the file")

	if err := f.d.SetModTime(ctx, uid, "/f", time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Move(ctx, uid, "/f", "/renamed", false); err != nil {
		t.Fatal(err)
	}
	if vs := f.versions(t, uid, "/renamed"); len(vs) != len(want) {
		t.Fatalf("a touch and a rename: %d versions, want %d", len(vs), len(want))
	}
	// Versions are not charged: the user has the current files only.
	q, err := f.d.QuotaOf(ctx, uid)
	if err != nil {
		t.Fatal(err)
	}
	if q.Finished > 3*int64(testChunk) {
		t.Fatalf("finished %d counts versions", q.Finished)
	}
}

// eofReader is a body that must not be read.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// TestRestoreVersionKeepsTheCurrent: a restore gives the old bytes back and
// keeps the content it replaced as a version; a version reads with an
// offset (what Range needs); another file's version is NotFound, a folder's
// Invalid.
func TestRestoreVersionKeepsTheCurrent(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	uid := f.a.ID
	old, cur := random(7, 2*testChunk+3), random(8, testChunk)
	f.put(t, uid, "/f", old)
	f.put(t, uid, "/f", cur)
	vs := f.versions(t, uid, "/f")
	if got := f.readVersion(t, uid, "/f", vs[0].ID, testChunk+1); !bytes.Equal(got, old[testChunk+1:]) {
		t.Fatalf("a version read from an offset: %d bytes", len(got))
	}
	f.put(t, uid, "/g", random(9, 10))
	f.put(t, uid, "/g", random(10, 10))
	gv := f.versions(t, uid, "/g")[0].ID
	if _, _, err := f.d.OpenFileVersion(ctx, uid, "/f", gv); !errs.Is(err, errs.NotFound) {
		t.Fatalf("another file's version: %v", err)
	}
	if _, _, err := f.d.OpenFileVersion(ctx, f.b.ID, "/f", vs[0].ID); !errs.Is(err, errs.NotFound) {
		t.Fatalf("another user's version: %v", err)
	}
	if _, err := f.d.Mkdir(ctx, uid, "/dir"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.d.FileVersions(ctx, uid, "/dir"); !errs.Is(err, errs.Invalid) {
		t.Fatalf("versions of a folder: %v", err)
	}
	if _, err := f.d.RestoreVersion(ctx, uid, "/f", gv); !errs.Is(err, errs.NotFound) {
		t.Fatalf("restore of another file's version: %v", err)
	}
	if _, err := f.d.RestoreVersion(ctx, uid, "/f", vs[0].ID); err != nil {
		t.Fatal(err)
	}
	r, err := f.d.Open(ctx, uid, "/f")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	r.Close()
	if !bytes.Equal(got, old) {
		t.Fatalf("after the restore the file holds %d other bytes", len(got))
	}
	vs = f.versions(t, uid, "/f")
	if len(vs) != 1 || !bytes.Equal(f.readVersion(t, uid, "/f", vs[0].ID, 0), cur) {
		t.Fatalf("after the restore: %d versions, want the replaced content as one", len(vs))
	}
	if err := f.d.DeleteVersion(ctx, uid, "/f", vs[0].ID); err != nil {
		t.Fatal(err)
	}
	if vs := f.versions(t, uid, "/f"); len(vs) != 0 {
		t.Fatalf("after the delete: %d versions", len(vs))
	}
}

// TestGCKeepsVersionChunks: GC never removes a chunk only a version holds;
// expunging the version frees it; fsck checks a version's chunks like a
// file's.
func TestGCKeepsVersionChunks(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	uid := f.a.ID
	old := random(11, 2*testChunk)
	f.put(t, uid, "/f", old)
	f.put(t, uid, "/f", random(12, 2*testChunk))
	if res, err := f.d.GC(ctx); err != nil || res.Chunks != 0 {
		t.Fatalf("GC with a version = %+v, %v", res, err)
	}
	vs := f.versions(t, uid, "/f")
	if got := f.readVersion(t, uid, "/f", vs[0].ID, 0); !bytes.Equal(got, old) {
		t.Fatal("the version's bytes changed after GC")
	}
	_, cs, err := f.m.Version(ctx, uid, "/f", vs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	blob := func(sha string) string { return filepath.Join(f.dir, "chunks", sha[:2], sha[2:4], sha) }
	saved, err := os.ReadFile(blob(cs[0].SHA256))
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(blob(cs[0].SHA256))
	res, err := f.d.Fsck(ctx, nil)
	if err != nil || len(res.Problems) != 1 || res.Problems[0].SHA256 != cs[0].SHA256 || res.Problems[0].Problem != "missing" {
		t.Fatalf("fsck of a version's missing chunk = %+v, %v", res.Problems, err)
	}
	os.WriteFile(blob(cs[0].SHA256), saved, 0o600)
	if err := f.d.DeleteVersion(ctx, uid, "/f", vs[0].ID); err != nil {
		t.Fatal(err)
	}
	if res, err := f.d.GC(ctx); err != nil || res.Chunks != 2 {
		t.Fatalf("GC after the expunge = %+v, %v", res, err)
	}
}

// TestExpireVersions: the thinning schedule and the policy's bounds on the
// injected clock.
func TestExpireVersions(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	e := drivetest.New(t, drivetest.Options{ChunkSize: testChunk, Clock: clock})
	f := &fixture{d: e.Drive, m: e.Meta, dir: e.Dir, a: e.AddUser(t, "alice", 0)}
	ctx := context.Background()
	uid := f.a.ID
	save := func(seed int64) { f.put(t, uid, "/f", random(seed, 100)) }
	// Saves every 2 s for a minute: 30 versions within the last minute.
	save(100)
	for i := range 30 {
		clock.Advance(2 * time.Second)
		save(int64(101 + i))
	}
	if n := len(f.versions(t, uid, "/f")); n != 30 {
		t.Fatalf("%d versions before thinning", n)
	}
	if _, err := f.d.ExpireVersions(ctx, drive.VersionPolicy{}); err != nil {
		t.Fatal(err)
	}
	// At most one per 10 s within the last minute.
	vs := f.versions(t, uid, "/f")
	if len(vs) < 6 || len(vs) > 7 {
		t.Fatalf("%d versions of the last minute after thinning, want one per 10 s", len(vs))
	}
	for i := 1; i < len(vs); i++ {
		if gap := vs[i-1].Saved.Sub(vs[i].Saved); gap < 10*time.Second {
			t.Fatalf("versions %v apart kept", gap)
		}
	}
	// Two hours later they are an hour's: one per minute.
	clock.Advance(2 * time.Hour)
	if _, err := f.d.ExpireVersions(ctx, drive.VersionPolicy{}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.versions(t, uid, "/f")); n != 1 {
		t.Fatalf("%d versions from one minute, two hours on; want 1", n)
	}
	// Count and age bounds.
	for i := range 5 {
		clock.Advance(2 * time.Hour)
		save(int64(200 + i))
	}
	if _, err := f.d.ExpireVersions(ctx, drive.VersionPolicy{Max: 3}); err != nil {
		t.Fatal(err)
	}
	vs = f.versions(t, uid, "/f")
	if len(vs) != 3 {
		t.Fatalf("%d versions with Max 3", len(vs))
	}
	n, err := f.d.ExpireVersions(ctx, drive.VersionPolicy{MaxAge: 3 * time.Hour})
	// The three were saved 0, 2 and 4 hours ago.
	if err != nil || n != 1 {
		t.Fatalf("MaxAge 3h expunged %d, %v; want 1", n, err)
	}
	if vs := f.versions(t, uid, "/f"); len(vs) != 2 || clock.Now().Sub(vs[1].Saved) > 3*time.Hour {
		t.Fatalf("after MaxAge: %+v", vs)
	}
}
