package metatest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/meta"
)

// Users, trees, props, checksums, chunk records and stats.

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
	e.must(e.s.SetQuota(e.ctx, bob, 5+meta.EntryCharge("f")))
	if b, _ := e.s.UserByID(e.ctx, bob); b.PassHash != "h2" || b.QuotaTotal != 5+meta.EntryCharge("f") {
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
	// A refused commit leaves nothing behind, nor is the user charged.
	for _, p := range []string{"/nope/f", "/d/f/g"} {
		if _, err := e.s.Stat(e.ctx, a, p); !errs.Is(err, errs.NotFound) {
			t.Fatalf("Stat(%s) after a refused commit: %v", p, err)
		}
	}
	if got := e.finished(a); got != 4 {
		t.Fatalf("finished bytes %d after refused commits, want 4", got)
	}
	// Trees are per user: bob sees none of alice's.
	_, err = e.s.Stat(e.ctx, b, "/d")
	wantKind(t, "another user's directory", err, errs.NotFound)
	e.mkdir(b, "/d") // the same path is free in bob's tree
	if n := e.stat(a, "/d/f"); n.UserID != a || n.IsDir || n.Size != 4 || n.Name() != "f" {
		t.Fatalf("file %+v", n)
	}
}

func testCommit(t *testing.T, e *env) {
	// 10 bytes of files and the entries of /f and /g (charge.go).
	a := e.user("alice", 10+meta.EntryCharge("f")+meta.EntryCharge("g"))
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
	testPropBounds(t, e, e.stat(a, "/g").ID)
}

// testPropBounds fills node id's properties to each bound: one byte or one
// property more is TooLarge, and a refused patch changes nothing (the set
// before it in the same patch included). Bytes count multi-byte characters
// as bytes.
func testPropBounds(t *testing.T, e *env, id int64) {
	e.must(e.s.PatchProps(e.ctx, id, nil, []meta.Prop{{Space: "urn:x", Local: "author"}}))
	before := func() []meta.Prop { ps, err := e.s.Props(e.ctx, id); e.must(err); return ps }
	unchanged := func(what string, want []meta.Prop) {
		t.Helper()
		if got := before(); len(got) != len(want) {
			t.Fatalf("%s: %d properties after a refused patch, want %d", what, len(got), len(want))
		}
	}
	// One property: namespace + name + language + value bytes.
	val := func(n int) string { return strings.Repeat("é", n/2) + strings.Repeat("v", n%2) }
	head := len("urn:x") + len("big")
	big := meta.Prop{Space: "urn:x", Local: "big", InnerXML: val(meta.MaxPropBytes - head)}
	e.must(e.s.PatchProps(e.ctx, id, []meta.Prop{big}, nil))
	big.InnerXML += "x"
	wantKind(t, "a property one byte over MaxPropBytes", e.s.PatchProps(e.ctx, id, []meta.Prop{big}, nil), errs.TooLarge)
	e.must(e.s.PatchProps(e.ctx, id, nil, []meta.Prop{big}))

	// All of a node's properties, in bytes: several patches that each fit.
	var all []meta.Prop
	for total := 0; total+meta.MaxPropBytes <= meta.MaxPropBytesPerNode; total += meta.MaxPropBytes {
		p := meta.Prop{Space: "urn:x", Local: fmt.Sprintf("p%d", len(all)), InnerXML: val(meta.MaxPropBytes - len("urn:x") - len(fmt.Sprintf("p%d", len(all))))}
		e.must(e.s.PatchProps(e.ctx, id, []meta.Prop{p}, nil))
		all = append(all, p)
	}
	held := before()
	extra := meta.Prop{Space: "urn:x", Local: "one-more", InnerXML: "x"}
	fine := meta.Prop{Space: "urn:x", Local: "fine", InnerXML: "y"}
	wantKind(t, "a byte past MaxPropBytesPerNode", e.s.PatchProps(e.ctx, id, []meta.Prop{fine, extra}, nil), errs.TooLarge)
	unchanged("bytes per node", held)
	// Replacing a property by a smaller one makes room.
	small := all[0]
	small.InnerXML = "s"
	e.must(e.s.PatchProps(e.ctx, id, []meta.Prop{small, extra}, nil))
	e.must(e.s.PatchProps(e.ctx, id, nil, append(all, extra)))

	// How many properties a node has.
	var many []meta.Prop
	for i := 0; i < meta.MaxPropsPerNode; i++ {
		many = append(many, meta.Prop{Space: "urn:n", Local: fmt.Sprintf("n%d", i), InnerXML: "1"})
	}
	e.must(e.s.PatchProps(e.ctx, id, many, nil))
	wantKind(t, "one property past MaxPropsPerNode", e.s.PatchProps(e.ctx, id, []meta.Prop{extra}, nil), errs.TooLarge)
	unchanged("properties per node", many)
	// Replacing one is no new property.
	many[0].InnerXML = "2"
	e.must(e.s.PatchProps(e.ctx, id, []meta.Prop{many[0]}, nil))
	e.must(e.s.PatchProps(e.ctx, id, nil, many))
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
	if un, err := e.s.UnreferencedChunks(e.ctx, 10); err != nil || len(un) != 0 {
		t.Fatalf("unreferenced while the trash holds them: %+v %v", un, err)
	}
	// Expunging the trash item is what makes them garbage.
	e.must2(e.s.EmptyTrash(e.ctx, a))
	un, err := e.s.UnreferencedChunks(e.ctx, 10)
	e.must(err)
	if len(un) != 2 {
		t.Fatalf("unreferenced after the expunge: %+v", un)
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

func testTreeTx(t *testing.T, e *env) {
	a := e.user("alice", 0)
	ec := meta.EntryCharge // every new entry's charge is part of a change's growth
	var n meta.Node
	var grew int64
	err := e.s.Tx(e.ctx, func(tx *meta.Tx) (err error) {
		n, grew, err = e.s.CommitFileTx(e.ctx, tx, a, "/f", file(t0, chunk("a", 6)), meta.NoGrowthLimit)
		return err
	})
	if err != nil || grew != 6+ec("f") || n.Size != 6 || e.finished(a) != 6 {
		t.Fatalf("CommitFileTx = %+v, %d, %v; finished %d", n, grew, err, e.finished(a))
	}
	// Growth beyond what the caller reserved is refused, and nothing commits.
	err = e.s.Tx(e.ctx, func(tx *meta.Tx) error {
		_, _, err := e.s.CommitFileTx(e.ctx, tx, a, "/g", file(t0, chunk("b", 5)), 4+ec("g"))
		return err
	})
	wantKind(t, "growth past maxGrowth", err, errs.Quota)
	if _, err := e.s.Stat(e.ctx, a, "/g"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a refused change committed: %v", err)
	}
	// fn's error rolls every change of the transaction back.
	boom := errors.New("boom")
	err = e.s.Tx(e.ctx, func(tx *meta.Tx) error {
		if _, _, err := e.s.CommitFileTx(e.ctx, tx, a, "/h", file(t0, chunk("c", 1)), meta.NoGrowthLimit); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Tx returned %v, want fn's error", err)
	}
	if _, err := e.s.Stat(e.ctx, a, "/h"); !errs.Is(err, errs.NotFound) || e.finished(a) != 6 {
		t.Fatalf("a rolled-back change is visible: %v, finished %d", err, e.finished(a))
	}
	e.mkdir(a, "/d")
	e.commit(a, "/d/x", chunk("x", 3))
	if n, err := e.s.SubtreeSize(e.ctx, a, "/d"); err != nil || n != 3+ec("d")+ec("x") {
		t.Fatalf("SubtreeSize(/d) = %d, %v", n, err)
	}
	if n, err := e.s.SubtreeSize(e.ctx, a, "/f"); err != nil || n != 6+ec("f") {
		t.Fatalf("SubtreeSize(/f) = %d, %v", n, err)
	}
	// TreeBytes counts content only, below any depth, and a file is its size.
	e.mkdir(a, "/d/e")
	e.commit(a, "/d/e/y", chunk("y", 4))
	for p, want := range map[string]int64{"/d": 7, "/d/e": 4, "/f": 6, "/": 13} {
		if n, err := e.s.TreeBytes(e.ctx, a, p); err != nil || n != want {
			t.Fatalf("TreeBytes(%s) = %d, %v; want %d", p, n, err, want)
		}
	}
	if _, err := e.s.TreeBytes(e.ctx, a, "/nope"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("TreeBytes of a missing path: %v", err)
	}
	if err := e.s.Tx(e.ctx, func(tx *meta.Tx) error { _, err := e.s.RemoveTx(e.ctx, tx, a, "/d/e/y"); return err }); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Tx(e.ctx, func(tx *meta.Tx) error { _, err := e.s.RemoveTx(e.ctx, tx, a, "/d/e"); return err }); err != nil {
		t.Fatal(err)
	}
	var delta int64
	tx := func(fn func(tx *meta.Tx) (int64, error)) error {
		return e.s.Tx(e.ctx, func(tx *meta.Tx) (err error) { delta, err = fn(tx); return err })
	}
	cp := 3 + ec("c") + ec("x")
	if err := tx(func(tx *meta.Tx) (int64, error) { return e.s.CopyTx(e.ctx, tx, a, "/d", "/c", false, true, cp) }); err != nil || delta != cp {
		t.Fatalf("CopyTx = %d, %v", delta, err)
	}
	err = tx(func(tx *meta.Tx) (int64, error) { return e.s.CopyTx(e.ctx, tx, a, "/d", "/c2", false, true, cp) })
	wantKind(t, "a copy past maxGrowth", err, errs.Quota)
	if err := tx(func(tx *meta.Tx) (int64, error) { return e.s.MoveTx(e.ctx, tx, a, "/c/x", "/f", true) }); err != nil || delta != -6-ec("f") {
		t.Fatalf("MoveTx over a 6-byte file = %d, %v; want %d", delta, err, -6-ec("f"))
	}
	if err := tx(func(tx *meta.Tx) (int64, error) { return e.s.RemoveTx(e.ctx, tx, a, "/d") }); err != nil || delta != -3-ec("d")-ec("x") {
		t.Fatalf("RemoveTx = %d, %v; want %d", delta, err, -3-ec("d")-ec("x"))
	}
	if e.finished(a) != 3 {
		t.Fatalf("finished %d, want 3", e.finished(a))
	}
}

// testReplacingHint: NewFile.Replacing only orders the commit's statements; a
// wrong hint either way still gives the right tree, folder time and bytes.
func testReplacingHint(t *testing.T, e *env) {
	a := e.user("alice", 100+10*meta.EntryBytes)
	e.mkdir(a, "/d")
	dirTime := e.stat(a, "/d").ModTime
	e.clock.Advance(time.Second)
	// Replacing, but nothing is there (deleted meanwhile): a new file, and
	// the folder changes.
	f := file(e.clock.Now(), chunk("a", 3))
	f.Replacing = true
	if n, err := e.s.CommitFile(e.ctx, a, "/d/f", f); err != nil || n.Size != 3 || n.ID == 0 {
		t.Fatalf("CommitFile(Replacing) of a new file = %+v, %v", n, err)
	}
	if d := e.stat(a, "/d"); !d.ModTime.After(dirTime) {
		t.Fatalf("folder time %v not after %v: a new entry changes its folder", d.ModTime, dirTime)
	}
	dirTime = e.stat(a, "/d").ModTime
	e.clock.Advance(time.Second)
	// Not replacing, but a file is there (created meanwhile): replaced, its
	// id kept, the folder unchanged, the bytes counted once.
	id := e.stat(a, "/d/f").ID
	if n, err := e.s.CommitFile(e.ctx, a, "/d/f", file(e.clock.Now(), chunk("b", 5))); err != nil || n.ID != id || n.Size != 5 {
		t.Fatalf("CommitFile over a file = %+v, %v; want id %d", n, err, id)
	}
	if d := e.stat(a, "/d"); !d.ModTime.Equal(dirTime) {
		t.Fatalf("folder time %v changed to %v by replacing a file's content", dirTime, d.ModTime)
	}
	if got := e.finished(a); got != 5 {
		t.Fatalf("finished %d, want 5", got)
	}
	// Replacing a folder, or under a missing one, is refused either way.
	f = file(e.clock.Now(), chunk("c", 1))
	f.Replacing = true
	_, err := e.s.CommitFile(e.ctx, a, "/d", f)
	wantKind(t, "CommitFile(Replacing) over a directory", err, errs.IsDir)
	_, err = e.s.CommitFile(e.ctx, a, "/nope/f", f)
	wantKind(t, "CommitFile(Replacing) without a parent", err, errs.NoParent)
	if got := e.finished(a); got != 5 {
		t.Fatalf("finished %d after refused commits, want 5", got)
	}
}
