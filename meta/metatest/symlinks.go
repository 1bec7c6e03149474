package metatest

import (
	"strings"
	"testing"

	"netdisk/errs"
	"netdisk/meta"
)

func (e *env) symlink(uid int64, p, target string) meta.Node {
	e.t.Helper()
	n, err := e.s.Symlink(e.ctx, uid, p, target, e.clock.Now())
	e.must(err)
	return n
}

// testSymlinks: a link is a third kind of node, stored and returned as
// given, never resolved; it has no chunks, costs its target's length (as a
// file of that size) and moves, copies and goes like any entry.
func testSymlinks(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.mkdir(a, "/d")
	e.commit(a, "/d/f", chunk("a", 5))
	dangling := "../nowhere/" + strings.Repeat("x", 20)
	outside := "/etc/passwd" // kept as text: the store never follows it
	n := e.symlink(a, "/d/l1", "f")
	e.symlink(a, "/d/l2", dangling)
	e.symlink(a, "/d/abs", outside)
	if n.Kind() != meta.KindSymlink || n.IsDir || n.Target != "f" || n.Size != 1 || n.FileHash != "" {
		t.Fatalf("Symlink returned %+v", n)
	}
	for p, want := range map[string]string{"/d/l1": "f", "/d/l2": dangling, "/d/abs": outside} {
		if n := e.stat(a, p); n.Kind() != meta.KindSymlink || n.Target != want || n.Size != int64(len(want)) || n.Perm() != 0o777 {
			t.Fatalf("Stat %s: %+v (kind %v)", p, n, n.Kind())
		}
	}
	if k := e.stat(a, "/d/f").Kind(); k != meta.KindFile {
		t.Fatalf("a file's kind is %v", k)
	}
	if k := e.stat(a, "/d").Kind(); k != meta.KindDir {
		t.Fatalf("a folder's kind is %v", k)
	}
	// Listings (both queries) carry the kind and the target.
	kids, err := e.s.List(e.ctx, a, "/d")
	e.must(err)
	_, kids2, err := e.s.ListDir(e.ctx, a, "/d")
	e.must(err)
	tree, err := e.s.Tree(e.ctx, a, "/", 100)
	e.must(err)
	for what, ns := range map[string][]meta.Node{"List": kids, "ListDir": kids2, "Tree": tree} {
		got := map[string]string{}
		for _, n := range ns {
			if n.IsSymlink() {
				got[n.Path] = n.Target
			}
		}
		if len(got) != 3 || got["/d/l1"] != "f" || got["/d/l2"] != dangling || got["/d/abs"] != outside {
			t.Fatalf("%s shows the links as %v", what, got)
		}
	}
	if cs, err := e.s.FileChunks(e.ctx, n.ID); err != nil || len(cs) != 0 {
		t.Fatalf("a link's chunks: %v %v", cs, err)
	}
	// Charged the target's length, like a file of that size.
	links := int64(len("f") + len(dangling) + len(outside))
	if got := e.finished(a); got != 5+links {
		t.Fatalf("finished %d, want 5 + %d for the links' targets", got, links)
	}

	// Refusals: a name taken, a missing or non-folder parent, a bad target.
	_, err = e.s.Symlink(e.ctx, a, "/d/f", "x", e.clock.Now())
	wantKind(t, "Symlink over a file", err, errs.Exists)
	_, err = e.s.Symlink(e.ctx, a, "/d/l1", "x", e.clock.Now())
	wantKind(t, "Symlink over a link", err, errs.Exists)
	_, err = e.s.Symlink(e.ctx, a, "/nope/l", "x", e.clock.Now())
	wantKind(t, "Symlink without a parent", err, errs.NoParent)
	_, err = e.s.Symlink(e.ctx, a, "/d/l1/x", "x", e.clock.Now())
	wantKind(t, "Symlink below a link (never followed)", err, errs.NotDir)
	_, err = e.s.Mkdir(e.ctx, a, "/d/l1/x", e.clock.Now())
	wantKind(t, "Mkdir below a link (never followed)", err, errs.NotDir)
	_, err = e.s.Symlink(e.ctx, a, "/d/empty", "", e.clock.Now())
	wantKind(t, "an empty target", err, errs.Invalid)
	_, err = e.s.Symlink(e.ctx, a, "/d/nul", "a\x00b", e.clock.Now())
	wantKind(t, "a target with NUL", err, errs.Invalid)
	_, err = e.s.Symlink(e.ctx, a, "/d/long", strings.Repeat("a", meta.MaxSymlinkTarget+1), e.clock.Now())
	wantKind(t, "a target over the limit", err, errs.TooLarge)
	long := strings.Repeat("a/", meta.MaxSymlinkTarget/2)
	if n := e.symlink(a, "/d/longest", long); e.stat(a, n.Path).Target != long {
		t.Fatal("a target of the largest length did not come back whole")
	}
	e.must(e.s.Remove(e.ctx, a, "/d/longest"))
	_, err = e.s.List(e.ctx, a, "/d/l1")
	wantKind(t, "List of a link", err, errs.NotDir)

	// Rename of a link, rename of a folder holding links, rename over a link.
	e.must(e.s.Move(e.ctx, a, "/d/l1", "/d/l1b", false))
	if n := e.stat(a, "/d/l1b"); n.Target != "f" {
		t.Fatalf("renamed link: %+v", n)
	}
	e.must(e.s.Move(e.ctx, a, "/d", "/m", false))
	if n := e.stat(a, "/m/l2"); n.Target != dangling {
		t.Fatalf("link in a renamed folder: %+v", n)
	}
	e.commit(a, "/g", chunk("b", 2))
	e.must(e.s.Move(e.ctx, a, "/g", "/m/abs", true)) // a file renamed over a link replaces it
	if n := e.stat(a, "/m/abs"); n.Kind() != meta.KindFile || n.Size != 2 {
		t.Fatalf("file renamed over a link: %+v", n)
	}
	links -= int64(len(outside))
	if got := e.finished(a); got != 5+2+links {
		t.Fatalf("after renames finished %d, want %d", got, 5+2+links)
	}
	e.symlink(a, "/m/abs2", outside)
	e.must(e.s.Move(e.ctx, a, "/m/abs2", "/m/f", true)) // a link renamed over a file replaces it
	if n := e.stat(a, "/m/f"); n.Kind() != meta.KindSymlink || n.Target != outside {
		t.Fatalf("link renamed over a file: %+v", n)
	}
	if got := e.finished(a); got != 2+links+int64(len(outside)) {
		t.Fatalf("after a link replaced a file finished %d, want %d", got, 2+links+int64(len(outside)))
	}
	// A file committed at a link's path replaces the link by a file.
	e.commit(a, "/m/f", chunk("a", 5))
	if n := e.stat(a, "/m/f"); n.Kind() != meta.KindFile || n.Target != "" || n.Size != 5 {
		t.Fatalf("file committed over a link: %+v", n)
	}
	if got := e.finished(a); got != 2+links+5 {
		t.Fatalf("after a file replaced a link finished %d, want %d", got, 2+links+5)
	}
	// A link holds no content, so replacing it keeps no version.
	if _, vs, err := e.s.FileVersions(e.ctx, a, "/m/f"); err != nil || len(vs) != 0 {
		t.Fatalf("versions of a file that replaced a link: %v, %v", vs, err)
	}

	// A recursive copy copies the links as links, and charges them again.
	before := e.finished(a)
	e.must(e.s.Copy(e.ctx, a, "/m", "/c", false, true))
	if n := e.stat(a, "/c/l2"); n.Kind() != meta.KindSymlink || n.Target != dangling {
		t.Fatalf("copied link: %+v", n)
	}
	if got := e.finished(a); got != 2*before {
		t.Fatalf("after the copy finished %d, want %d", got, 2*before)
	}
	e.must(e.s.Copy(e.ctx, a, "/c/l1b", "/lone", false, false))
	if n := e.stat(a, "/lone"); n.Target != "f" {
		t.Fatalf("a copied link: %+v", n)
	}

	// Instant upload never binds a link: it has no content hash.
	if _, _, found, err := e.s.FileHeld(e.ctx, a, "", 1, 10); err != nil || found {
		t.Fatalf("FileHeld of the empty hash, a link's size: found %v, %v", found, err)
	}
	// No checksums for a link: it has no content.
	pend, err := e.s.PendingChecksums(e.ctx, 0, 100)
	e.must(err)
	for _, p := range pend {
		if p.IsSymlink() {
			t.Fatalf("the checksum pass is handed link %s", p.Path)
		}
	}

	// Delete removes the link, never its target, and gives its bytes back.
	e.must(e.s.Remove(e.ctx, a, "/lone"))
	if n := e.stat(a, "/c/f"); n.Kind() != meta.KindFile {
		t.Fatalf("removing a link touched its target: %+v", n)
	}
	e.must(e.s.Remove(e.ctx, a, "/c"))
	e.must(e.s.Remove(e.ctx, a, "/m"))
	if got := e.finished(a); got != 0 {
		t.Fatalf("finished %d after everything went", got)
	}

	// Quota: a link needs room for its target.
	q := e.user("quinn", 10)
	_, err = e.s.Symlink(e.ctx, q, "/l", strings.Repeat("t", 20), e.clock.Now())
	wantKind(t, "a link past the quota", err, errs.Quota)
}
