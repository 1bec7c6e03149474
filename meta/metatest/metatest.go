// Package metatest is the conformance suite every meta.Store runs: the SQLite
// store today, the PostgreSQL store when it comes. It checks the contract the
// interfaces in package meta document (results and error kinds), never an
// implementation's tables.
package metatest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/meta"
)

// Open returns a fresh, empty store whose clock is now (the store stamps
// folder times, chunk records and settlements with it).
type Open func(t *testing.T, now func() time.Time) meta.Store

// clock is the suite's injected time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// env is one store under test with its clock and helpers.
type env struct {
	t     *testing.T
	ctx   context.Context
	s     meta.Store
	clock *clock
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T, open Open) *env {
	c := &clock{t: t0}
	s := open(t, c.Now)
	t.Cleanup(func() { s.Close() })
	return &env{t: t, ctx: context.Background(), s: s, clock: c}
}

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

func wantKind(t *testing.T, what string, err error, k errs.Kind) {
	t.Helper()
	if !errs.Is(err, k) {
		t.Fatalf("%s: %v (kind %v), want kind %v", what, err, errs.KindOf(err), k)
	}
}

func (e *env) user(name string, quota int64) int64 {
	e.t.Helper()
	u, err := e.s.CreateUser(e.ctx, name, "hash-"+name, false, quota)
	e.must(err)
	return u.ID
}

func (e *env) stat(uid int64, p string) meta.Node {
	e.t.Helper()
	n, err := e.s.Stat(e.ctx, uid, p)
	e.must(err)
	return n
}

func (e *env) finished(uid int64) int64 {
	e.t.Helper()
	u, err := e.s.UserByID(e.ctx, uid)
	e.must(err)
	return u.Finished
}

func (e *env) unfinished(uid int64) int64 {
	e.t.Helper()
	u, err := e.s.UserByID(e.ctx, uid)
	e.must(err)
	return u.Unfinished
}

// chunk is a chunk record named by s (the store never reads chunk bytes).
func chunk(s string, size int64) meta.Chunk {
	return meta.Chunk{SHA256: "sha-" + s, MD5: "md5-" + s, Size: size}
}

// file is a version made of chunks.
func file(mtime time.Time, cs ...meta.Chunk) meta.NewFile {
	f := meta.NewFile{ModTime: mtime, Chunks: cs}
	for _, c := range cs {
		f.Size += c.Size
		f.FileHash += c.MD5
	}
	return f
}

func (e *env) commit(uid int64, p string, cs ...meta.Chunk) meta.Node {
	e.t.Helper()
	n, err := e.s.CommitFile(e.ctx, uid, p, file(e.clock.Now(), cs...))
	e.must(err)
	return n
}

func (e *env) mkdir(uid int64, p string) {
	e.t.Helper()
	_, err := e.s.Mkdir(e.ctx, uid, p, e.clock.Now())
	e.must(err)
}

func paths(ns []meta.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Path
	}
	return out
}

func same(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// Run runs the whole suite; each case gets a fresh store from open.
func Run(t *testing.T, open Open) {
	cases := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"Users", testUsers},
		{"TreeShape", testTreeShape},
		{"CommitAndFinishedBytes", testCommit},
		{"FolderTimes", testFolderTimes},
		{"MoveCopyRemove", testMoveCopyRemove},
		{"ListingsAndLimits", testListings},
		{"ModesAndTimes", testModes},
		{"Props", testProps},
		{"Checksums", testChecksums},
		{"ChunksAndGC", testChunks},
		{"Sessions", testSessions},
		{"SessionChunks", testSessionChunks},
		{"MergeSession", testMergeSession},
		{"DropAndExpire", testDropAndExpire},
		{"Challenges", testChallenges},
		{"InstantUploadLookups", testLookups},
		{"QuotaFlushes", testQuotaFlushes},
		{"Stats", testStats},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newEnv(t, open)) })
	}
}

func testUsers(t *testing.T, e *env) {
	u, err := e.s.CreateUser(e.ctx, "alice", "h1", true, 100)
	e.must(err)
	if u.ID == 0 || u.Name != "alice" || u.PassHash != "h1" || !u.IsAdmin || u.QuotaTotal != 100 || u.Finished != 0 || u.Unfinished != 0 {
		t.Fatalf("created %+v", u)
	}
	if root := e.stat(u.ID, "/"); !root.IsDir || root.Path != "/" || root.Name() != "/" {
		t.Fatalf("root %+v", root)
	}
	_, err = e.s.CreateUser(e.ctx, "ALICE", "h", false, 0)
	wantKind(t, "a name taken in another case", err, errs.Exists)
	for _, name := range []string{"alice", "ALICE", "Alice"} {
		if got, err := e.s.UserByName(e.ctx, name); err != nil || got.ID != u.ID {
			t.Fatalf("UserByName(%q) = %+v, %v", name, got, err)
		}
	}
	_, err = e.s.UserByName(e.ctx, "nobody")
	wantKind(t, "unknown name", err, errs.NotFound)
	_, err = e.s.UserByID(e.ctx, u.ID+1000)
	wantKind(t, "unknown id", err, errs.NotFound)
	bob := e.user("bob", 0)
	us, err := e.s.ListUsers(e.ctx)
	e.must(err)
	if len(us) != 2 || us[0].Name != "alice" || us[1].Name != "bob" {
		t.Fatalf("ListUsers = %+v", us)
	}
	e.must(e.s.SetPassword(e.ctx, bob, "h2"))
	e.must(e.s.SetQuota(e.ctx, bob, 5))
	if b, _ := e.s.UserByID(e.ctx, bob); b.PassHash != "h2" || b.QuotaTotal != 5 {
		t.Fatalf("after updates %+v", b)
	}
	wantKind(t, "SetPassword of nobody", e.s.SetPassword(e.ctx, 9999, "x"), errs.NotFound)
	wantKind(t, "SetQuota of nobody", e.s.SetQuota(e.ctx, 9999, 1), errs.NotFound)
	e.commit(bob, "/f", chunk("a", 3))
	e.must(e.s.DeleteUser(e.ctx, bob))
	_, err = e.s.UserByID(e.ctx, bob)
	wantKind(t, "deleted user", err, errs.NotFound)
	_, err = e.s.Stat(e.ctx, bob, "/f")
	wantKind(t, "a deleted user's file", err, errs.NotFound)
	wantKind(t, "DeleteUser twice", e.s.DeleteUser(e.ctx, bob), errs.NotFound)
}

func testTreeShape(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	e.mkdir(a, "/d")
	_, err := e.s.Mkdir(e.ctx, a, "/d", e.clock.Now())
	wantKind(t, "Mkdir of an existing directory", err, errs.Exists)
	_, err = e.s.Mkdir(e.ctx, a, "/", e.clock.Now())
	wantKind(t, "Mkdir of the root", err, errs.Exists)
	_, err = e.s.Mkdir(e.ctx, a, "/x/y", e.clock.Now())
	wantKind(t, "Mkdir without a parent", err, errs.NoParent)
	e.commit(a, "/d/f", chunk("1", 4))
	_, err = e.s.Mkdir(e.ctx, a, "/d/f/g", e.clock.Now())
	wantKind(t, "Mkdir under a file", err, errs.NotDir)
	_, err = e.s.CommitFile(e.ctx, a, "/d", file(e.clock.Now(), chunk("2", 1)))
	wantKind(t, "CommitFile over a directory", err, errs.IsDir)
	_, err = e.s.CommitFile(e.ctx, a, "/nope/f", file(e.clock.Now(), chunk("2", 1)))
	wantKind(t, "CommitFile without a parent", err, errs.NoParent)
	_, err = e.s.CommitFile(e.ctx, a, "/d/f/g", file(e.clock.Now(), chunk("2", 1)))
	wantKind(t, "CommitFile under a file", err, errs.NotDir)
	// Trees are per user: bob sees none of alice's.
	_, err = e.s.Stat(e.ctx, b, "/d")
	wantKind(t, "another user's directory", err, errs.NotFound)
	e.mkdir(b, "/d") // the same path is free in bob's tree
	if n := e.stat(a, "/d/f"); n.UserID != a || n.IsDir || n.Size != 4 || n.Name() != "f" {
		t.Fatalf("file %+v", n)
	}
}

func testCommit(t *testing.T, e *env) {
	a := e.user("alice", 10)
	mt := t0.Add(-time.Hour)
	f := file(mt, chunk("a", 3), chunk("b", 4))
	f.Mode, f.MD5, f.SHA1 = 0o600, "content-md5", "content-sha1"
	n, err := e.s.CommitFile(e.ctx, a, "/f", f)
	e.must(err)
	got := e.stat(a, "/f")
	if got.ID != n.ID || got.Size != 7 || got.FileHash != f.FileHash || !got.ModTime.Equal(mt) || got.Perm() != 0o600 ||
		got.MD5 != "content-md5" || got.SHA1 != "content-sha1" {
		t.Fatalf("committed %+v, stat %+v", n, got)
	}
	fcs, err := e.s.FileChunks(e.ctx, n.ID)
	e.must(err)
	if len(fcs) != 2 || fcs[0].Index != 0 || fcs[0].Offset != 0 || fcs[0].SHA256 != "sha-a" || fcs[1].Index != 1 || fcs[1].Offset != 3 || fcs[1].Size != 4 {
		t.Fatalf("chunks %+v", fcs)
	}
	if e.finished(a) != 7 {
		t.Fatalf("finished %d, want 7", e.finished(a))
	}
	// A new version replaces the old in place: same node, new content; the
	// mode is kept when the version gives none; unknown checksums stay unknown.
	n2, err := e.s.CommitFile(e.ctx, a, "/f", file(mt, chunk("c", 2)))
	e.must(err)
	got = e.stat(a, "/f")
	if n2.ID != n.ID || got.Size != 2 || got.Perm() != 0o600 || got.MD5 != "" {
		t.Fatalf("new version %+v", got)
	}
	if fcs, _ := e.s.FileChunks(e.ctx, n.ID); len(fcs) != 1 || fcs[0].SHA256 != "sha-c" {
		t.Fatalf("chunks of the new version %+v", fcs)
	}
	if e.finished(a) != 2 {
		t.Fatalf("finished %d, want 2", e.finished(a))
	}
	// The total bounds growth; the refused commit changes nothing.
	_, err = e.s.CommitFile(e.ctx, a, "/big", file(mt, chunk("d", 9)))
	wantKind(t, "a commit past the total", err, errs.Quota)
	if _, err := e.s.Stat(e.ctx, a, "/big"); !errs.Is(err, errs.NotFound) || e.finished(a) != 2 {
		t.Fatalf("refused commit left %v, finished %d", err, e.finished(a))
	}
	// Chunk records are shared by SHA-256: the same content committed twice
	// is one record.
	e.commit(a, "/g", chunk("a", 3))
	ca, err := e.s.ChunkBySHA256(e.ctx, "sha-a")
	e.must(err)
	fcs, _ = e.s.FileChunks(e.ctx, e.stat(a, "/g").ID)
	if fcs[0].ID != ca.ID {
		t.Fatalf("a second record for the same content: %d vs %d", fcs[0].ID, ca.ID)
	}
}

func testFolderTimes(t *testing.T, e *env) {
	a := e.user("alice", 0)
	mt := t0.Add(-24 * time.Hour)
	_, err := e.s.Mkdir(e.ctx, a, "/d", mt)
	e.must(err)
	if got := e.stat(a, "/d").ModTime; !got.Equal(mt) {
		t.Fatalf("Mkdir time %v, want %v", got, mt)
	}
	if got := e.stat(a, "/").ModTime; !got.Equal(mt) {
		t.Fatalf("a new folder sets its parent's time to its own: %v, want %v", got, mt)
	}
	e.clock.Advance(time.Minute)
	created := e.clock.Now()
	e.must2(e.s.CommitFile(e.ctx, a, "/d/f", file(mt, chunk("a", 1))))
	if got := e.stat(a, "/d").ModTime; !got.Equal(created) {
		t.Fatalf("a new file touches its folder: %v, want %v", got, created)
	}
	if got := e.stat(a, "/").ModTime; !got.Equal(mt) {
		t.Fatalf("ancestors are not touched: %v", got)
	}
	e.clock.Advance(time.Minute)
	e.must2(e.s.CommitFile(e.ctx, a, "/d/f", file(mt, chunk("b", 1))))
	if got := e.stat(a, "/d").ModTime; !got.Equal(created) {
		t.Fatalf("a new version does not touch its folder: %v, want %v", got, created)
	}
	e.mkdir(a, "/e")
	e.clock.Advance(time.Minute)
	moved := e.clock.Now()
	e.must(e.s.Move(e.ctx, a, "/d/f", "/e/f", false))
	if d, ee := e.stat(a, "/d").ModTime, e.stat(a, "/e").ModTime; !d.Equal(moved) || !ee.Equal(moved) {
		t.Fatalf("a move touches both folders: %v %v, want %v", d, ee, moved)
	}
	if got := e.stat(a, "/e/f").ModTime; !got.Equal(mt) {
		t.Fatalf("a moved file keeps its time: %v", got)
	}
	e.clock.Advance(time.Minute)
	removed := e.clock.Now()
	e.must(e.s.Remove(e.ctx, a, "/e/f"))
	if got := e.stat(a, "/e").ModTime; !got.Equal(removed) {
		t.Fatalf("a remove touches the folder: %v, want %v", got, removed)
	}
	e.clock.Advance(time.Minute)
	copied := e.clock.Now()
	e.must(e.s.Copy(e.ctx, a, "/e", "/d/e2", false, true))
	if got := e.stat(a, "/d").ModTime; !got.Equal(copied) {
		t.Fatalf("a copy touches the destination's folder: %v, want %v", got, copied)
	}
}

func (e *env) must2(_ any, err error) {
	e.t.Helper()
	e.must(err)
}

func testMoveCopyRemove(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.mkdir(a, "/d")
	e.mkdir(a, "/d/sub")
	e.commit(a, "/d/sub/f", chunk("a", 5))
	e.commit(a, "/d/g", chunk("b", 2))
	e.commit(a, "/other", chunk("c", 1))
	if e.finished(a) != 8 {
		t.Fatalf("finished %d", e.finished(a))
	}
	wantKind(t, "move into itself", e.s.Move(e.ctx, a, "/d", "/d/sub/x", false), errs.Permission)
	wantKind(t, "move onto an existing name", e.s.Move(e.ctx, a, "/d/g", "/other", false), errs.Exists)
	wantKind(t, "move of nothing", e.s.Move(e.ctx, a, "/nope", "/x", false), errs.NotFound)
	wantKind(t, "move to a missing parent", e.s.Move(e.ctx, a, "/other", "/x/y", false), errs.NoParent)
	e.must(e.s.Move(e.ctx, a, "/d", "/m", false))
	for _, p := range []string{"/m", "/m/sub", "/m/sub/f", "/m/g"} {
		if _, err := e.s.Stat(e.ctx, a, p); err != nil {
			t.Fatalf("after the move %s: %v", p, err)
		}
	}
	if _, err := e.s.Stat(e.ctx, a, "/d/sub/f"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("old path after the move: %v", err)
	}
	if e.finished(a) != 8 {
		t.Fatalf("a move changed finished: %d", e.finished(a))
	}
	// Overwrite replaces the destination in the same step, giving its bytes back.
	e.must(e.s.Move(e.ctx, a, "/m/g", "/other", true))
	if n := e.stat(a, "/other"); n.Size != 2 || e.finished(a) != 7 {
		t.Fatalf("overwriting move: %+v, finished %d", n, e.finished(a))
	}
	// Copies share chunks and count their bytes.
	e.must(e.s.Copy(e.ctx, a, "/m", "/c", false, true))
	if e.finished(a) != 12 {
		t.Fatalf("finished after a recursive copy %d, want 12", e.finished(a))
	}
	src, _ := e.s.FileChunks(e.ctx, e.stat(a, "/m/sub/f").ID)
	dst, _ := e.s.FileChunks(e.ctx, e.stat(a, "/c/sub/f").ID)
	if len(src) != 1 || len(dst) != 1 || src[0].ID != dst[0].ID {
		t.Fatalf("the copy does not share chunks: %+v %+v", src, dst)
	}
	wantKind(t, "copy onto an existing name", e.s.Copy(e.ctx, a, "/other", "/c/sub/f", false, false), errs.Exists)
	e.must(e.s.Copy(e.ctx, a, "/m", "/shallow", false, false))
	if kids, err := e.s.List(e.ctx, a, "/shallow"); err != nil || len(kids) != 0 {
		t.Fatalf("a non-recursive copy of a directory: %v %v", paths(kids), err)
	}
	// Remove takes the subtree and gives its bytes back; the root stays.
	e.must(e.s.Remove(e.ctx, a, "/c"))
	if _, err := e.s.Stat(e.ctx, a, "/c/sub/f"); !errs.Is(err, errs.NotFound) || e.finished(a) != 7 {
		t.Fatalf("after Remove: %v, finished %d", err, e.finished(a))
	}
	wantKind(t, "remove of nothing", e.s.Remove(e.ctx, a, "/c"), errs.NotFound)
	wantKind(t, "remove of the root", e.s.Remove(e.ctx, a, "/"), errs.Permission)
}

func testListings(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.mkdir(a, "/d")
	for _, p := range []string{"/d/b", "/d/a", "/d/c"} {
		e.commit(a, p, chunk(p, 1))
	}
	e.mkdir(a, "/d/z")
	e.commit(a, "/d/z/deep", chunk("deep", 1))
	// Names that sort around '/' must not leak into a subtree.
	e.commit(a, "/d-x", chunk("dx", 1))
	e.commit(a, "/d0", chunk("d0", 1))
	kids, err := e.s.List(e.ctx, a, "/d")
	e.must(err)
	if want := []string{"/d/a", "/d/b", "/d/c", "/d/z"}; !same(paths(kids), want) {
		t.Fatalf("List = %v, want %v", paths(kids), want)
	}
	_, err = e.s.List(e.ctx, a, "/d/a")
	wantKind(t, "List of a file", err, errs.NotDir)
	_, err = e.s.List(e.ctx, a, "/nope")
	wantKind(t, "List of nothing", err, errs.NotFound)
	self, kids, err := e.s.ListDir(e.ctx, a, "/d")
	e.must(err)
	if self.Path != "/d" || !self.IsDir || !same(paths(kids), []string{"/d/a", "/d/b", "/d/c", "/d/z"}) {
		t.Fatalf("ListDir = %+v %v", self, paths(kids))
	}
	self, kids, err = e.s.ListDir(e.ctx, a, "/d/a")
	if err != nil || self.Path != "/d/a" || len(kids) != 0 {
		t.Fatalf("ListDir of a file = %+v %v %v", self, kids, err)
	}
	tree, err := e.s.Tree(e.ctx, a, "/d", 100)
	e.must(err)
	if want := []string{"/d/a", "/d/b", "/d/c", "/d/z", "/d/z/deep"}; !same(paths(tree), want) {
		t.Fatalf("Tree = %v, want %v", paths(tree), want)
	}
	if tree, _ := e.s.Tree(e.ctx, a, "/d", 2); len(tree) != 3 {
		t.Fatalf("Tree with limit 2 returned %d, want limit+1", len(tree))
	}
	_, err = e.s.Tree(e.ctx, a, "/d/a", 10)
	wantKind(t, "Tree of a file", err, errs.NotDir)
	if n, err := e.s.CountTree(e.ctx, a, "/d", 100); err != nil || n != 5 {
		t.Fatalf("CountTree = %d, %v; want 5", n, err)
	}
	if n, err := e.s.CountTree(e.ctx, a, "/d", 2); err != nil || n != 3 {
		t.Fatalf("CountTree with limit 2 = %d, %v; want 3", n, err)
	}
	if n, err := e.s.CountTree(e.ctx, a, "/", 100); err != nil || n != 8 {
		t.Fatalf("CountTree of the root = %d, %v; want 8", n, err)
	}
}

func testModes(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.commit(a, "/f", chunk("a", 1))
	if got := e.stat(a, "/f").Perm(); got != meta.DefaultFileMode {
		t.Fatalf("default file mode %o", got)
	}
	e.must(e.s.SetMode(e.ctx, a, "/f", 0))
	if got := e.stat(a, "/f").Perm(); got != 0 {
		t.Fatalf("chmod 000 read back as %o", got)
	}
	wantKind(t, "bits outside 0o7777", e.s.SetMode(e.ctx, a, "/f", 0o10000), errs.Invalid)
	wantKind(t, "SetMode of nothing", e.s.SetMode(e.ctx, a, "/nope", 0o600), errs.NotFound)
	n, err := e.s.MkdirMode(e.ctx, a, "/d", t0, 0o700)
	e.must(err)
	if n.Perm() != 0o700 || e.stat(a, "/d").Perm() != 0o700 {
		t.Fatalf("MkdirMode %o / %o", n.Perm(), e.stat(a, "/d").Perm())
	}
	_, err = e.s.MkdirMode(e.ctx, a, "/d2", t0, 0o17777)
	wantKind(t, "MkdirMode with bits outside 0o7777", err, errs.Invalid)
	mt := t0.Add(-48 * time.Hour)
	e.must(e.s.SetModTime(e.ctx, a, "/f", mt))
	if got := e.stat(a, "/f").ModTime; !got.Equal(mt) {
		t.Fatalf("SetModTime: %v, want %v", got, mt)
	}
	wantKind(t, "SetModTime of nothing", e.s.SetModTime(e.ctx, a, "/nope", mt), errs.NotFound)
}

func testProps(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.mkdir(a, "/d")
	e.mkdir(a, "/d/sub")
	f := e.commit(a, "/d/sub/f", chunk("a", 1))
	d, sub := e.stat(a, "/d"), e.stat(a, "/d/sub")
	p1 := meta.Prop{Space: "urn:x", Local: "color", InnerXML: "red", Lang: "en"}
	p2 := meta.Prop{Space: "urn:x", Local: "author", InnerXML: "<b>me</b>"}
	e.must(e.s.PatchProps(e.ctx, d.ID, []meta.Prop{p1, p2}, nil))
	e.must(e.s.PatchProps(e.ctx, sub.ID, []meta.Prop{p1}, nil))
	e.must(e.s.PatchProps(e.ctx, f.ID, []meta.Prop{p2}, nil))
	ps, err := e.s.Props(e.ctx, d.ID)
	e.must(err)
	if len(ps) != 2 || ps[0] != p2 || ps[1] != p1 {
		t.Fatalf("Props = %+v", ps)
	}
	// Set replaces, remove deletes, in one step.
	p1b := p1
	p1b.InnerXML = "blue"
	e.must(e.s.PatchProps(e.ctx, d.ID, []meta.Prop{p1b}, []meta.Prop{p2}))
	if ps, _ := e.s.Props(e.ctx, d.ID); len(ps) != 1 || ps[0] != p1b {
		t.Fatalf("after a patch %+v", ps)
	}
	under, err := e.s.PropsUnder(e.ctx, a, "/d", false)
	e.must(err)
	if len(under) != 2 || len(under[d.ID]) != 1 || len(under[sub.ID]) != 1 {
		t.Fatalf("PropsUnder (children) = %+v", under)
	}
	under, err = e.s.PropsUnder(e.ctx, a, "/d", true)
	e.must(err)
	if len(under) != 3 || len(under[f.ID]) != 1 {
		t.Fatalf("PropsUnder (subtree) = %+v", under)
	}
	// Copies carry dead properties.
	e.must(e.s.Copy(e.ctx, a, "/d/sub/f", "/g", false, false))
	if ps, _ := e.s.Props(e.ctx, e.stat(a, "/g").ID); len(ps) != 1 || ps[0] != p2 {
		t.Fatalf("props of a copy %+v", ps)
	}
}

func testChecksums(t *testing.T, e *env) {
	a := e.user("alice", 0)
	known := file(t0, chunk("k", 1))
	known.MD5, known.SHA1 = "m", "s"
	_, err := e.s.CommitFile(e.ctx, a, "/known", known)
	e.must(err)
	f := e.commit(a, "/f", chunk("a", 2))
	e.mkdir(a, "/dir")
	pend, err := e.s.PendingChecksums(e.ctx, 0, 10)
	e.must(err)
	if len(pend) != 1 || pend[0].ID != f.ID {
		t.Fatalf("pending %v", paths(pend))
	}
	if pend, _ := e.s.PendingChecksums(e.ctx, f.ID, 10); len(pend) != 0 {
		t.Fatalf("pending after %d: %v", f.ID, paths(pend))
	}
	// Checksums of another version are refused.
	if ok, err := e.s.SetChecksums(e.ctx, f.ID, "other-hash", f.Size, "m", "s"); err != nil || ok {
		t.Fatalf("stale SetChecksums = %v, %v", ok, err)
	}
	if ok, err := e.s.SetChecksums(e.ctx, f.ID, f.FileHash, f.Size, "m2", "s2"); err != nil || !ok {
		t.Fatalf("SetChecksums = %v, %v", ok, err)
	}
	if n := e.stat(a, "/f"); n.MD5 != "m2" || n.SHA1 != "s2" {
		t.Fatalf("checksums %+v", n)
	}
	if ok, _ := e.s.SetChecksums(e.ctx, f.ID, f.FileHash, f.Size, "m3", "s3"); ok {
		t.Fatal("known checksums overwritten")
	}
	if pend, _ := e.s.PendingChecksums(e.ctx, 0, 10); len(pend) != 0 {
		t.Fatalf("pending after the pass %v", paths(pend))
	}
}

func testChunks(t *testing.T, e *env) {
	a := e.user("alice", 0)
	// Two different chunks may share an MD5: both are kept, told apart by SHA-256.
	c1 := meta.Chunk{SHA256: "sha-1", MD5: "same", Size: 1}
	c2 := meta.Chunk{SHA256: "sha-2", MD5: "same", Size: 2}
	e.commit(a, "/f", c1, c2)
	cs, err := e.s.ChunksByMD5(e.ctx, "same")
	e.must(err)
	if len(cs) != 2 {
		t.Fatalf("ChunksByMD5 = %+v", cs)
	}
	_, err = e.s.ChunkBySHA256(e.ctx, "sha-none")
	wantKind(t, "ChunkBySHA256 of nothing", err, errs.NotFound)
	if un, err := e.s.UnreferencedChunks(e.ctx, 10); err != nil || len(un) != 0 {
		t.Fatalf("unreferenced while a file holds them: %+v %v", un, err)
	}
	if ok, err := e.s.DeleteChunkIfUnreferenced(e.ctx, "sha-1"); err != nil || ok {
		t.Fatalf("deleted a referenced chunk: %v %v", ok, err)
	}
	e.must(e.s.Remove(e.ctx, a, "/f"))
	un, err := e.s.UnreferencedChunks(e.ctx, 10)
	e.must(err)
	if len(un) != 2 {
		t.Fatalf("unreferenced after the remove: %+v", un)
	}
	if un, _ := e.s.UnreferencedChunks(e.ctx, 1); len(un) != 1 {
		t.Fatalf("limit 1 gave %d", len(un))
	}
	if ok, err := e.s.DeleteChunkIfUnreferenced(e.ctx, "sha-1"); err != nil || !ok {
		t.Fatalf("DeleteChunkIfUnreferenced = %v %v", ok, err)
	}
	if ok, err := e.s.DeleteChunkIfUnreferenced(e.ctx, "sha-1"); err != nil || ok {
		t.Fatalf("second delete = %v %v", ok, err)
	}
	var seen []string
	e.must(e.s.EachChunk(e.ctx, func(c meta.Chunk) error { seen = append(seen, c.SHA256); return nil }))
	if !same(seen, []string{"sha-2"}) {
		t.Fatalf("EachChunk saw %v", seen)
	}
	stop := errors.New("stop")
	if err := e.s.EachChunk(e.ctx, func(meta.Chunk) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("EachChunk returns fn's error: %v", err)
	}
}

// session opens a session of uid for path and size, returning its id.
func (e *env) session(uid int64, id, path string, size int64, fileHash string) string {
	e.t.Helper()
	got, err := e.s.CreateSession(e.ctx, meta.Session{ID: id, UserID: uid, Path: path, Size: size, ChunkSize: 4, FileHash: fileHash, Replaces: 1},
		e.clock.Now().Add(-time.Hour), e.clock.Now())
	e.must(err)
	return got
}

func testSessions(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	id := e.session(a, "s1", "/f", 10, "")
	if id != "s1" {
		t.Fatalf("CreateSession = %q", id)
	}
	ss, err := e.s.Session(e.ctx, a, "s1")
	e.must(err)
	if ss.ID != "s1" || ss.UserID != a || ss.Path != "/f" || ss.Size != 10 || ss.ChunkSize != 4 || ss.State != meta.SessionOpen ||
		ss.Replaces != 1 || ss.Received != 0 || !ss.Touched.Equal(t0) {
		t.Fatalf("session %+v", ss)
	}
	_, err = e.s.Session(e.ctx, b, "s1")
	if !errors.Is(err, meta.ErrNoSession) || !errs.Is(err, errs.NotFound) {
		t.Fatalf("another user's session: %v, want ErrNoSession", err)
	}
	// A matching open session is resumed (and touched), not duplicated.
	e.clock.Advance(time.Minute)
	if got := e.session(a, "s2", "/f", 10, "hash"); got != "s1" {
		t.Fatalf("a second init made %q, want s1 resumed", got)
	}
	ss, _ = e.s.Session(e.ctx, a, "s1")
	if !ss.Touched.Equal(t0.Add(time.Minute)) || ss.FileHash != "hash" {
		t.Fatalf("resumed session %+v: touched and given the hash", ss)
	}
	if _, err := e.s.Session(e.ctx, a, "s2"); !errors.Is(err, meta.ErrNoSession) {
		t.Fatalf("the resumed init left a row: %v", err)
	}
	now := e.clock.Now()
	for _, c := range []struct {
		path      string
		size      int64
		hash      string
		notBefore time.Time
		want      string
	}{
		{"/f", 10, "", now.Add(-time.Hour), "s1"},
		{"/f", 10, "hash", now.Add(-time.Hour), "s1"},
		{"/f", 10, "other", now.Add(-time.Hour), ""},
		{"/f", 11, "", now.Add(-time.Hour), ""},
		{"/g", 10, "", now.Add(-time.Hour), ""},
		{"/f", 10, "", now.Add(time.Second), ""}, // idle too long
	} {
		got, err := e.s.ResumeSession(e.ctx, a, c.path, c.size, c.hash, c.notBefore, now)
		if err != nil || got != c.want {
			t.Fatalf("ResumeSession(%s, %d, %q) = %q, %v; want %q", c.path, c.size, c.hash, got, err, c.want)
		}
	}
	if got, _ := e.s.ResumeSession(e.ctx, b, "/f", 10, "", now.Add(-time.Hour), now); got != "" {
		t.Fatalf("bob resumed alice's session %q", got)
	}
}

func testSessionChunks(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	e.session(a, "s1", "/f", 10, "")
	c0, c1 := chunk("0", 4), chunk("1", 4)
	e.clock.Advance(time.Minute)
	e.must(e.s.AddSessionChunk(e.ctx, "s1", 1, c1, e.clock.Now()))
	e.must(e.s.AddSessionChunk(e.ctx, "s1", 0, c0, e.clock.Now()))
	e.must(e.s.AddSessionChunk(e.ctx, "s1", 0, c0, e.clock.Now())) // again: nothing changes
	ss, _ := e.s.Session(e.ctx, a, "s1")
	if ss.Received != 8 || !ss.Touched.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after two chunks %+v", ss)
	}
	err := e.s.AddSessionChunk(e.ctx, "s1", 0, chunk("other", 4), e.clock.Now())
	if !errors.Is(err, meta.ErrIndexTaken) || !errs.Is(err, errs.Conflict) {
		t.Fatalf("another chunk at a held index: %v", err)
	}
	err = e.s.AddSessionChunk(e.ctx, "nope", 0, c0, e.clock.Now())
	if !errors.Is(err, meta.ErrNoSession) || !errs.Is(err, errs.NotFound) {
		t.Fatalf("a chunk for no session: %v", err)
	}
	rec, err := e.s.ChunkBySHA256(e.ctx, c0.SHA256)
	e.must(err)
	err = e.s.AddSessionChunk(e.ctx, "s1", 2, meta.Chunk{ID: rec.ID + 1000, SHA256: "sha-gone", MD5: "x", Size: 2}, e.clock.Now())
	if !errors.Is(err, meta.ErrChunkGone) || !errs.Is(err, errs.NotFound) {
		t.Fatalf("a vanished chunk by id: %v", err)
	}
	// A chunk named by id is reused as it is.
	e.session(b, "s2", "/f", 4, "")
	e.must(e.s.AddSessionChunk(e.ctx, "s2", 0, rec, e.clock.Now()))
	held, err := e.s.SessionChunks(e.ctx, "s1")
	e.must(err)
	if len(held) != 2 || held[0].Index != 0 || held[0].SHA256 != c0.SHA256 || held[1].Index != 1 || held[1].SHA256 != c1.SHA256 {
		t.Fatalf("SessionChunks = %+v", held)
	}
	if c, ok, err := e.s.SessionChunkAt(e.ctx, "s1", 1); err != nil || !ok || c.SHA256 != c1.SHA256 {
		t.Fatalf("SessionChunkAt(1) = %+v %v %v", c, ok, err)
	}
	if _, ok, err := e.s.SessionChunkAt(e.ctx, "s1", 2); err != nil || ok {
		t.Fatalf("SessionChunkAt(2) = %v %v", ok, err)
	}
	// Session chunks are not garbage; they count as the user's for instant upload.
	if un, _ := e.s.UnreferencedChunks(e.ctx, 10); len(un) != 0 {
		t.Fatalf("session chunks listed as garbage: %+v", un)
	}
	if ok, _ := e.s.DeleteChunkIfUnreferenced(e.ctx, c1.SHA256); ok {
		t.Fatal("a session's chunk deleted")
	}
	c1rec, _ := e.s.ChunkBySHA256(e.ctx, c1.SHA256)
	if ok, err := e.s.UserHoldsChunk(e.ctx, a, c1rec.ID); err != nil || !ok {
		t.Fatalf("UserHoldsChunk(alice) = %v %v", ok, err)
	}
	if ok, err := e.s.UserHoldsChunk(e.ctx, b, c1rec.ID); err != nil || ok {
		t.Fatalf("UserHoldsChunk(bob) = %v %v", ok, err)
	}
	open, err := e.s.OpenSessions(e.ctx)
	e.must(err)
	sort.Slice(open, func(i, j int) bool { return open[i].ID < open[j].ID })
	if len(open) != 2 || open[0].ID != "s1" || open[0].UserID != a || open[0].Size != 10 || open[0].Received != 8 ||
		fmt.Sprint(open[0].Held) != "[0 1]" || open[1].ID != "s2" || open[1].Received != 4 {
		t.Fatalf("OpenSessions = %+v", open)
	}
}

func testMergeSession(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.session(a, "s1", "/d/f", 8, "")
	cs := []meta.Chunk{chunk("0", 4), chunk("1", 4)}
	for i, c := range cs {
		e.must(e.s.AddSessionChunk(e.ctx, "s1", int64(i), c, e.clock.Now()))
	}
	held, _ := e.s.SessionChunks(e.ctx, "s1")
	f := file(t0, held[0].Chunk, held[1].Chunk)
	_, _, err := e.s.MergeSession(e.ctx, "s1", f, f.FileHash, e.clock.Now())
	wantKind(t, "merge without the parent", err, errs.NoParent)
	if ss, _ := e.s.Session(e.ctx, a, "s1"); ss.State != meta.SessionOpen {
		t.Fatalf("a failed merge closed the session: %+v", ss)
	}
	e.mkdir(a, "/d")
	// A file larger than the session declared grows usage past what it reserved.
	big := file(t0, chunk("x", 9))
	_, _, err = e.s.MergeSession(e.ctx, "s1", big, big.FileHash, e.clock.Now())
	wantKind(t, "merge past the declared size", err, errs.Quota)
	// Flushed unfinished bytes are settled in the merge.
	_, err = e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{{User: a, Upload: "s1", Seq: 1, Target: 8}})
	e.must(err)
	if e.unfinished(a) != 8 {
		t.Fatalf("unfinished after the flush %d", e.unfinished(a))
	}
	e.clock.Advance(time.Minute)
	n, growth, err := e.s.MergeSession(e.ctx, "s1", f, f.FileHash, e.clock.Now())
	e.must(err)
	if growth != 8 || n.Path != "/d/f" || n.Size != 8 || e.finished(a) != 8 || e.unfinished(a) != 0 {
		t.Fatalf("merged %+v growth %d, finished %d unfinished %d", n, growth, e.finished(a), e.unfinished(a))
	}
	ss, err := e.s.Session(e.ctx, a, "s1")
	e.must(err)
	if ss.State != meta.SessionMerged || ss.ResultHash != f.FileHash || ss.Received != 0 || !ss.Touched.Equal(e.clock.Now()) {
		t.Fatalf("merged session %+v", ss)
	}
	if fcs, _ := e.s.FileChunks(e.ctx, n.ID); len(fcs) != 2 {
		t.Fatalf("file chunks %+v", fcs)
	}
	_, _, err = e.s.MergeSession(e.ctx, "s1", f, f.FileHash, e.clock.Now())
	if !errors.Is(err, meta.ErrNoSession) || !errs.Is(err, errs.NotFound) {
		t.Fatalf("second merge: %v, want ErrNoSession", err)
	}
	if e.finished(a) != 8 {
		t.Fatalf("second merge counted twice: %d", e.finished(a))
	}
	err = e.s.AddSessionChunk(e.ctx, "s1", 0, cs[0], e.clock.Now())
	if !errors.Is(err, meta.ErrSessionClosed) || !errs.Is(err, errs.Conflict) {
		t.Fatalf("a chunk for a merged session: %v", err)
	}
	// A late flush of the merged upload is fenced out.
	_, err = e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{{User: a, Upload: "s1", Seq: 2, Target: 8}})
	e.must(err)
	if e.unfinished(a) != 0 {
		t.Fatalf("a late flush counted: %d", e.unfinished(a))
	}
	if open, _ := e.s.OpenSessions(e.ctx); len(open) != 0 {
		t.Fatalf("open after the merge %+v", open)
	}
	// Replacing a file grows usage by the difference only.
	e.session(a, "s2", "/d/f", 4, "")
	e.must(e.s.AddSessionChunk(e.ctx, "s2", 0, cs[0], e.clock.Now()))
	f2 := file(t0, cs[0])
	if _, growth, err := e.s.MergeSession(e.ctx, "s2", f2, f2.FileHash, e.clock.Now()); err != nil || growth != -4 || e.finished(a) != 4 {
		t.Fatalf("replacing merge growth %d, %v, finished %d", growth, err, e.finished(a))
	}
}

func testDropAndExpire(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.session(a, "s1", "/f", 4, "")
	e.must(e.s.AddSessionChunk(e.ctx, "s1", 0, chunk("0", 4), e.clock.Now()))
	_, err := e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{{User: a, Upload: "s1", Seq: 1, Target: 4}})
	e.must(err)
	ss, found, err := e.s.DropSession(e.ctx, "s1", e.clock.Now())
	if err != nil || !found || ss.ID != "s1" || ss.State != meta.SessionOpen || ss.UserID != a {
		t.Fatalf("DropSession = %+v %v %v", ss, found, err)
	}
	if e.unfinished(a) != 0 {
		t.Fatalf("drop did not settle: unfinished %d", e.unfinished(a))
	}
	if un, _ := e.s.UnreferencedChunks(e.ctx, 10); len(un) != 1 {
		t.Fatalf("a dropped session's chunk is garbage: %+v", un)
	}
	if _, found, err := e.s.DropSession(e.ctx, "s1", e.clock.Now()); err != nil || found {
		t.Fatalf("second drop = %v %v", found, err)
	}
	// Expiry: open sessions idle past one cut, merged ones past another.
	e.session(a, "old", "/old", 0, "")
	e.session(a, "merged", "/m", 0, "")
	_, _, err = e.s.MergeSession(e.ctx, "merged", file(t0), "", e.clock.Now())
	e.must(err)
	e.clock.Advance(time.Hour)
	e.session(a, "fresh", "/fresh", 0, "")
	openCut, mergedCut := e.clock.Now().Add(-30*time.Minute), e.clock.Now().Add(-2*time.Hour)
	ids, err := e.s.IdleSessions(e.ctx, openCut, mergedCut, 10)
	e.must(err)
	if !same(ids, []string{"old"}) {
		t.Fatalf("IdleSessions = %v, want [old]", ids)
	}
	if _, dropped, err := e.s.DropIdleSession(e.ctx, "fresh", openCut, mergedCut, e.clock.Now()); err != nil || dropped {
		t.Fatalf("a fresh session dropped: %v %v", dropped, err)
	}
	if ss, dropped, err := e.s.DropIdleSession(e.ctx, "old", openCut, mergedCut, e.clock.Now()); err != nil || !dropped || ss.ID != "old" {
		t.Fatalf("DropIdleSession(old) = %+v %v %v", ss, dropped, err)
	}
	mergedCut = e.clock.Now()
	ids, _ = e.s.IdleSessions(e.ctx, openCut, mergedCut, 10)
	if !same(ids, []string{"merged"}) {
		t.Fatalf("IdleSessions after the retention = %v", ids)
	}
	if _, dropped, err := e.s.DropIdleSession(e.ctx, "merged", openCut, mergedCut, e.clock.Now()); err != nil || !dropped {
		t.Fatalf("DropIdleSession(merged) = %v %v", dropped, err)
	}
	if _, err := e.s.Stat(e.ctx, a, "/m"); err != nil {
		t.Fatalf("retiring a merged session removed its file: %v", err)
	}
	// Deleting the user takes their sessions.
	e.must(e.s.DeleteUser(e.ctx, a))
	if open, _ := e.s.OpenSessions(e.ctx); len(open) != 0 {
		t.Fatalf("sessions of a deleted user %+v", open)
	}
}

func testChallenges(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.session(a, "s1", "/f", 4, "")
	ch := meta.Challenge{Index: -1, Nonce: "n1", Proof: "p1", Target: `{"t":1}`, Expires: t0.Add(time.Minute)}
	e.must(e.s.PutChallenge(e.ctx, "s1", ch))
	ch.Nonce, ch.Proof = "n2", "p2" // a new challenge at the same index replaces the old
	e.must(e.s.PutChallenge(e.ctx, "s1", ch))
	got, ok, err := e.s.TakeChallenge(e.ctx, "s1", -1)
	if err != nil || !ok || got.Nonce != "n2" || got.Proof != "p2" || got.Target != ch.Target || !got.Expires.Equal(ch.Expires) || got.Index != -1 {
		t.Fatalf("TakeChallenge = %+v %v %v", got, ok, err)
	}
	if _, ok, err := e.s.TakeChallenge(e.ctx, "s1", -1); err != nil || ok {
		t.Fatalf("a challenge taken twice: %v %v", ok, err)
	}
	e.must(e.s.PutChallenge(e.ctx, "s1", meta.Challenge{Index: 0, Nonce: "a", Proof: "b", Target: "c", Expires: t0}))
	e.must(e.s.PutChallenge(e.ctx, "s1", meta.Challenge{Index: 1, Nonce: "a", Proof: "b", Target: "c", Expires: t0.Add(time.Hour)}))
	if n, err := e.s.DeleteExpiredChallenges(e.ctx, t0.Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("DeleteExpiredChallenges = %d %v", n, err)
	}
	if _, ok, _ := e.s.TakeChallenge(e.ctx, "s1", 1); !ok {
		t.Fatal("an unexpired challenge was deleted")
	}
	// Challenges go with their session.
	e.must(e.s.PutChallenge(e.ctx, "s1", meta.Challenge{Index: 2, Nonce: "a", Proof: "b", Target: "c", Expires: t0.Add(time.Hour)}))
	_, _, err = e.s.DropSession(e.ctx, "s1", e.clock.Now())
	e.must(err)
	if _, ok, _ := e.s.TakeChallenge(e.ctx, "s1", 2); ok {
		t.Fatal("a dropped session's challenge survived")
	}
}

func testLookups(t *testing.T, e *env) {
	a, b, c := e.user("alice", 0), e.user("bob", 0), e.user("carol", 0)
	fa := e.commit(a, "/a", chunk("x", 3))
	n, own, found, err := e.s.FileWithContent(e.ctx, b, fa.FileHash, 3)
	if err != nil || !found || own || n.ID != fa.ID {
		t.Fatalf("another user's file: %+v own %v found %v %v", n, own, found, err)
	}
	fb := e.commit(b, "/b", chunk("x", 3))
	n, own, found, err = e.s.FileWithContent(e.ctx, b, fa.FileHash, 3)
	if err != nil || !found || !own || n.ID != fb.ID {
		t.Fatalf("the user's own file first: %+v own %v found %v %v", n, own, found, err)
	}
	if _, _, found, err := e.s.FileWithContent(e.ctx, c, fa.FileHash, 4); err != nil || found {
		t.Fatalf("another size matched: %v %v", found, err)
	}
	if _, _, found, err := e.s.FileWithContent(e.ctx, c, "none", 3); err != nil || found {
		t.Fatalf("an unknown hash matched: %v %v", found, err)
	}
}

func testQuotaFlushes(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	writes, err := e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{
		{User: a, Upload: "u1", Seq: 1, Target: 10},
		{User: b, Upload: "u2", Seq: 1, Target: 5},
	})
	if err != nil || writes != 2 || e.unfinished(a) != 10 || e.unfinished(b) != 5 {
		t.Fatalf("flush: writes %d %v, unfinished %d %d", writes, err, e.unfinished(a), e.unfinished(b))
	}
	// A newer flush moves by the difference; a stale or repeated one is ignored.
	writes, err = e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{
		{User: a, Upload: "u1", Seq: 3, Target: 14},
		{User: a, Upload: "u1", Seq: 2, Target: 99},
		{User: b, Upload: "u2", Seq: 1, Target: 50},
	})
	if err != nil || writes != 1 || e.unfinished(a) != 14 || e.unfinished(b) != 5 {
		t.Fatalf("second flush: writes %d %v, unfinished %d %d", writes, err, e.unfinished(a), e.unfinished(b))
	}
	// A deleted user's flush counts nowhere.
	e.must(e.s.DeleteUser(e.ctx, b))
	if writes, err := e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{{User: b, Upload: "u3", Seq: 1, Target: 5}}); err != nil || writes != 0 {
		t.Fatalf("flush of a deleted user: %d %v", writes, err)
	}
	// Repair settles uploads that are not open and recomputes unfinished
	// from the open ones.
	_, err = e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{{User: a, Upload: "u4", Seq: 1, Target: 6}})
	e.must(err)
	recs, err := e.s.RepairQuotaFlushes(e.ctx, map[string]bool{"u4": true}, e.clock.Now())
	e.must(err)
	if len(recs) != 1 || recs["u4"] != (meta.QuotaRecord{Seq: 1, Flushed: 6}) || e.unfinished(a) != 6 {
		t.Fatalf("Repair = %+v, unfinished %d", recs, e.unfinished(a))
	}
	// The settled record fences later flushes out until it is pruned.
	if writes, _ := e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{{User: a, Upload: "u1", Seq: 9, Target: 20}}); writes != 0 || e.unfinished(a) != 6 {
		t.Fatalf("a flush after the settlement counted: %d, unfinished %d", writes, e.unfinished(a))
	}
	if n, err := e.s.PruneQuotaFlushes(e.ctx, e.clock.Now()); err != nil || n != 0 {
		t.Fatalf("prune before the cut = %d %v", n, err)
	}
	e.clock.Advance(time.Hour)
	if n, err := e.s.PruneQuotaFlushes(e.ctx, e.clock.Now()); err != nil || n != 1 {
		t.Fatalf("prune after the cut = %d %v, want the one tombstone", n, err)
	}
	if recs, _ := e.s.RepairQuotaFlushes(e.ctx, map[string]bool{"u4": true}, e.clock.Now()); len(recs) != 1 {
		t.Fatalf("prune removed an open record: %+v", recs)
	}
}

func testStats(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	e.mkdir(a, "/d")
	e.commit(a, "/d/f", chunk("x", 3), chunk("y", 4))
	e.commit(b, "/g", chunk("x", 3))
	st, err := e.s.Stats(e.ctx)
	e.must(err)
	want := meta.Stats{Users: 2, Files: 2, Dirs: 3, LogicalBytes: 10, PhysicalBytes: 7, Chunks: 2}
	if st != want {
		t.Fatalf("Stats = %+v, want %+v", st, want)
	}
}
