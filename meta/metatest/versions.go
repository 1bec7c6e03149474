package metatest

import (
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/meta"
)

// versionHashes returns the file hashes of the versions at p, newest first.
func (e *env) versionHashes(uid int64, p string) []string {
	e.t.Helper()
	_, vs, err := e.s.FileVersions(e.ctx, uid, p)
	e.must(err)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.FileHash
	}
	return out
}

func (e *env) unreferenced() []string {
	e.t.Helper()
	cs, err := e.s.UnreferencedChunks(e.ctx, 100)
	e.must(err)
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.SHA256
	}
	return out
}

// testVersionsOnCommit: every commit that changes a file's content keeps the
// replaced content as a version, with its time, size, hash, author and
// chunks; the same content again, or an empty file replaced, keeps none.
func testVersionsOnCommit(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.mkdir(a, "/d")
	first := e.commit(a, "/d/f", chunk("a", 3), chunk("b", 4))
	if hs := e.versionHashes(a, "/d/f"); len(hs) != 0 {
		t.Fatalf("a new file has versions %v", hs)
	}
	e.clock.Advance(time.Minute)
	saved := e.clock.Now()
	n := e.commit(a, "/d/f", chunk("a", 3), chunk("c", 5))
	if n.ID != first.ID {
		t.Fatalf("a new content gave a new node %d, want %d", n.ID, first.ID)
	}
	e.commit(a, "/d/f", chunk("a", 3), chunk("c", 5)) // the same bytes again
	_, vs, err := e.s.FileVersions(e.ctx, a, "/d/f")
	e.must(err)
	if len(vs) != 1 {
		t.Fatalf("versions after a change and a same-content save: %+v", vs)
	}
	v := vs[0]
	if v.Size != 7 || v.FileHash != "md5-amd5-b" || v.Author != a || v.UserID != a || v.NodeID != first.ID ||
		!v.Saved.Equal(saved) || !v.ModTime.Equal(first.ModTime) {
		t.Fatalf("version = %+v (saved want %v, mtime want %v)", v, saved, first.ModTime)
	}
	got, cs, err := e.s.Version(e.ctx, a, "/d/f", v.ID)
	e.must(err)
	if got.ID != v.ID || len(cs) != 2 || cs[0].SHA256 != "sha-a" || cs[1].SHA256 != "sha-b" || cs[1].Offset != 3 {
		t.Fatalf("Version = %+v, %+v", got, cs)
	}
	// Versions are not charged: only the current content is.
	if f := e.finished(a); f != 8 {
		t.Fatalf("finished = %d, want 8", f)
	}
	// An empty file has nothing to lose.
	e.commit(a, "/d/empty")
	e.commit(a, "/d/empty", chunk("e", 2))
	if hs := e.versionHashes(a, "/d/empty"); len(hs) != 0 {
		t.Fatalf("an empty file replaced kept versions %v", hs)
	}
	// A chunked-upload merge over the file keeps one too.
	f := file(e.clock.Now(), chunk("m", 6))
	f.Replacing = true
	id := e.session(a, "s1", "/d/f", 6, f.FileHash)
	e.must(e.s.AddSessionChunk(e.ctx, id, 0, chunk("m", 6), e.clock.Now()))
	_, _, _, err = e.s.MergeSession(e.ctx, id, f, f.FileHash, e.clock.Now())
	e.must(err)
	if hs := e.versionHashes(a, "/d/f"); !same(hs, []string{"md5-amd5-c", "md5-amd5-b"}) {
		t.Fatalf("versions after a merge, newest first: %v", hs)
	}
}

// testVersionsFollowTheFile: versions belong to the file, not the path: a
// rename takes them along; a file moved or copied over another keeps the
// destination's node, its history and its replaced content as the newest
// version (and a moved source's own versions).
func testVersionsFollowTheFile(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.mkdir(a, "/d")
	e.commit(a, "/f", chunk("1", 1))
	e.commit(a, "/f", chunk("2", 2))
	e.must(e.s.Move(e.ctx, a, "/f", "/d/g", false))
	if hs := e.versionHashes(a, "/d/g"); !same(hs, []string{"md5-1"}) {
		t.Fatalf("versions after a rename: %v", hs)
	}
	if _, err := e.s.Stat(e.ctx, a, "/f"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("the old name still exists: %v", err)
	}
	// An editor's save: write a temporary file, rename it over the file.
	dst := e.stat(a, "/d/g")
	tmp := e.commit(a, "/d/.g.swp", chunk("3", 3))
	e.must(e.s.PatchProps(e.ctx, tmp.ID, []meta.Prop{{Space: "ns", Local: "p", InnerXML: "v"}}, nil))
	before := e.finished(a)
	e.must(e.s.Move(e.ctx, a, "/d/.g.swp", "/d/g", true))
	n := e.stat(a, "/d/g")
	if n.ID != dst.ID || n.Size != 3 || n.FileHash != "md5-3" {
		t.Fatalf("after the rename-over: %+v, want node %d with the new content", n, dst.ID)
	}
	if hs := e.versionHashes(a, "/d/g"); !same(hs, []string{"md5-2", "md5-1"}) {
		t.Fatalf("versions after the rename-over, newest first: %v", hs)
	}
	if _, err := e.s.Stat(e.ctx, a, "/d/.g.swp"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("the moved source still exists: %v", err)
	}
	if ps, err := e.s.Props(e.ctx, n.ID); err != nil || len(ps) != 1 || ps[0].InnerXML != "v" {
		t.Fatalf("the moved file's properties: %+v, %v", ps, err)
	}
	// The moved file's bytes count once; its old entry and the replaced
	// content are gone from the charge.
	if got, want := e.finished(a), before-2; got != want {
		t.Fatalf("finished after the rename-over = %d, want %d", got, want)
	}
	// A source with versions of its own brings them along.
	e.commit(a, "/h", chunk("4", 4))
	e.commit(a, "/h", chunk("5", 5))
	e.must(e.s.Move(e.ctx, a, "/h", "/d/g", true))
	if hs := e.versionHashes(a, "/d/g"); !same(hs, []string{"md5-3", "md5-4", "md5-2", "md5-1"}) &&
		!same(hs, []string{"md5-4", "md5-3", "md5-2", "md5-1"}) {
		t.Fatalf("versions after a versioned file moved over: %v", hs)
	}
	// A copy over a file is a change of its content too.
	e.commit(a, "/c", chunk("6", 6))
	e.must(e.s.Copy(e.ctx, a, "/c", "/d/g", true, false))
	if n := e.stat(a, "/d/g"); n.ID != dst.ID || n.FileHash != "md5-6" {
		t.Fatalf("after the copy-over: %+v", n)
	}
	if hs := e.versionHashes(a, "/d/g"); len(hs) != 5 || hs[0] != "md5-5" {
		t.Fatalf("versions after a copy-over: %v", hs)
	}
	if hs := e.versionHashes(a, "/c"); len(hs) != 0 {
		t.Fatalf("the copy's source gained versions: %v", hs)
	}
	// Touch, chmod and a plain rename are not content changes.
	e.must(e.s.SetModTime(e.ctx, a, "/d/g", t0))
	e.must(e.s.SetMode(e.ctx, a, "/d/g", 0o600))
	e.must(e.s.Move(e.ctx, a, "/d/g", "/d/k", false))
	if hs := e.versionHashes(a, "/d/k"); len(hs) != 5 {
		t.Fatalf("touch, chmod and rename changed the versions: %v", hs)
	}
}

// testVersionErrors: a version of another file or user is NotFound, like
// one that never was; a folder has no versions (Invalid).
func testVersionErrors(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	e.mkdir(a, "/d")
	e.commit(a, "/f", chunk("1", 1))
	e.commit(a, "/f", chunk("2", 2))
	e.commit(a, "/g", chunk("3", 3))
	e.commit(b, "/f", chunk("4", 4))
	_, vs, err := e.s.FileVersions(e.ctx, a, "/f")
	e.must(err)
	vid := vs[0].ID
	_, _, err = e.s.Version(e.ctx, a, "/g", vid)
	wantKind(t, "a version of another file", err, errs.NotFound)
	_, _, err = e.s.Version(e.ctx, b, "/f", vid)
	wantKind(t, "another user's version", err, errs.NotFound)
	_, _, err = e.s.Version(e.ctx, a, "/f", vid+1000)
	wantKind(t, "a version that never was", err, errs.NotFound)
	_, _, err = e.s.FileVersions(e.ctx, a, "/d")
	wantKind(t, "versions of a folder", err, errs.Invalid)
	_, _, err = e.s.FileVersions(e.ctx, a, "/nope")
	wantKind(t, "versions of nothing", err, errs.NotFound)
	wantKind(t, "delete another file's version", e.s.DeleteVersion(e.ctx, a, "/g", vid), errs.NotFound)
	wantKind(t, "delete another user's version", e.s.DeleteVersion(e.ctx, b, "/f", vid), errs.NotFound)
	err = e.s.Tx(e.ctx, func(tx *meta.Tx) error {
		_, _, err := e.s.RestoreVersionTx(e.ctx, tx, a, "/g", vid, e.clock.Now(), meta.NoGrowthLimit)
		return err
	})
	wantKind(t, "restore another file's version", err, errs.NotFound)
	if ok, err := e.s.ExpungeVersion(e.ctx, b, vid); err != nil || ok {
		t.Fatalf("another user expunged a version: %v %v", ok, err)
	}
	e.must(e.s.DeleteVersion(e.ctx, a, "/f", vid))
	if hs := e.versionHashes(a, "/f"); len(hs) != 0 {
		t.Fatalf("versions after the delete: %v", hs)
	}
}

// testRestoreVersion: a restore makes the version the content, keeps the
// content it replaces as a version, and moves the finished bytes.
func testRestoreVersion(t *testing.T, e *env) {
	ec := meta.EntryCharge
	a := e.user("alice", 95+ec("f")+ec("g"))
	e.commit(a, "/f", chunk("1", 10))
	e.commit(a, "/f", chunk("2", 20))
	_, vs, err := e.s.FileVersions(e.ctx, a, "/f")
	e.must(err)
	restore := func(vid, maxGrowth int64) (n meta.Node, delta int64, err error) {
		err = e.s.Tx(e.ctx, func(tx *meta.Tx) error {
			n, delta, err = e.s.RestoreVersionTx(e.ctx, tx, a, "/f", vid, e.clock.Now(), maxGrowth)
			return err
		})
		return n, delta, err
	}
	e.clock.Advance(time.Hour)
	n, delta, err := restore(vs[0].ID, meta.NoGrowthLimit)
	e.must(err)
	if n.Size != 10 || n.FileHash != "md5-1" || delta != -10 || !n.ModTime.Equal(e.clock.Now()) {
		t.Fatalf("restore = %+v, %d", n, delta)
	}
	if cur := e.stat(a, "/f"); cur.Size != 10 || cur.FileHash != "md5-1" {
		t.Fatalf("after the restore the file is %+v", cur)
	}
	if cs, err := e.s.FileChunks(e.ctx, n.ID); err != nil || len(cs) != 1 || cs[0].SHA256 != "sha-1" {
		t.Fatalf("chunks after the restore: %+v %v", cs, err)
	}
	if hs := e.versionHashes(a, "/f"); !same(hs, []string{"md5-2"}) {
		t.Fatalf("versions after the restore: %v", hs)
	}
	if f := e.finished(a); f != 10 {
		t.Fatalf("finished = %d", f)
	}
	// A restore that grows the file is bounded like any growth.
	_, vs, _ = e.s.FileVersions(e.ctx, a, "/f")
	_, _, err = restore(vs[0].ID, 5)
	wantKind(t, "a restore beyond the reservation", err, errs.Quota)
	e.commit(a, "/g", chunk("3", 80))
	_, _, err = restore(vs[0].ID, meta.NoGrowthLimit)
	wantKind(t, "a restore past the quota", err, errs.Quota)
	if hs := e.versionHashes(a, "/f"); !same(hs, []string{"md5-2"}) {
		t.Fatalf("a refused restore changed the versions: %v", hs)
	}
}

// testVersionsAndGC: a version's chunks are live; expunging it, or deleting
// the owner, frees them. The listings retention walks.
func testVersionsAndGC(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	e.commit(a, "/f", chunk("old", 3))
	e.commit(a, "/f", chunk("new", 4))
	e.clock.Advance(time.Second)
	e.commit(b, "/x", chunk("bx", 1))
	e.commit(b, "/x", chunk("by", 1))
	e.commit(a, "/g", chunk("g1", 1))
	e.commit(a, "/g", chunk("g2", 2))
	if un := e.unreferenced(); len(un) != 0 {
		t.Fatalf("chunks only a version holds are garbage: %v", un)
	}
	if ok, err := e.s.DeleteChunkIfUnreferenced(e.ctx, "sha-old"); err != nil || ok {
		t.Fatalf("deleted a version's chunk: %v %v", ok, err)
	}
	old, err := e.s.OldestVersions(e.ctx, a, 0, 10)
	e.must(err)
	if len(old) != 2 || old[0].FileHash != "md5-old" || old[1].FileHash != "md5-g1" {
		t.Fatalf("OldestVersions = %+v", old)
	}
	if more, _ := e.s.OldestVersions(e.ctx, a, old[0].ID, 10); len(more) != 1 || more[0].ID != old[1].ID {
		t.Fatalf("OldestVersions after the first = %+v", more)
	}
	files, err := e.s.VersionedFiles(e.ctx, 0, 10)
	e.must(err)
	if len(files) != 3 {
		t.Fatalf("VersionedFiles = %v", files)
	}
	if nv, _ := e.s.NodeVersions(e.ctx, old[0].NodeID); len(nv) != 1 || nv[0].ID != old[0].ID {
		t.Fatalf("NodeVersions = %+v", nv)
	}
	if n, err := e.s.VersionBytes(e.ctx, a); err != nil || n != 4 {
		t.Fatalf("VersionBytes = %d, %v", n, err)
	}
	if ok, err := e.s.ExpungeVersion(e.ctx, a, old[0].ID); err != nil || !ok {
		t.Fatalf("ExpungeVersion = %v %v", ok, err)
	}
	if un := e.unreferenced(); !same(un, []string{"sha-old"}) {
		t.Fatalf("unreferenced after the expunge: %v", un)
	}
	e.must(e.s.Remove(e.ctx, b, "/x")) // a file in the trash with its version
	if broken, err := e.s.CheckHistory(e.ctx); err != nil || len(broken) != 0 {
		t.Fatalf("CheckHistory of a sound history: %q, %v", broken, err)
	}
	// A user deleted takes their files' versions along (nodes and users
	// cascade to file_versions): every chunk is garbage then.
	e.must(e.s.DeleteUser(e.ctx, a))
	e.must(e.s.DeleteUser(e.ctx, b))
	if un := e.unreferenced(); len(un) != 6 {
		t.Fatalf("unreferenced after the users went: %v", un)
	}
	if files, _ := e.s.VersionedFiles(e.ctx, 0, 10); len(files) != 0 {
		t.Fatalf("versions of a deleted user: %v", files)
	}
}
