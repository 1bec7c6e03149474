package metatest

import (
	"testing"

	"netdisk/errs"
)

// testNodeByID: a node is found by its id for its owner only; another
// user's id answers exactly as an id that names nothing, and a new version
// of a file keeps the file's id; a node in the trash has no id to find.
func testNodeByID(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	e.mkdir(a, "/d")
	f := e.commit(a, "/d/f.jpg", chunk("a", 10))
	n, err := e.s.NodeByID(e.ctx, a, f.ID)
	e.must(err)
	if n.Path != "/d/f.jpg" || n.FileHash != f.FileHash || n.UserID != a {
		t.Fatalf("NodeByID = %+v, want %+v", n, f)
	}
	d := e.stat(a, "/d")
	if n, err := e.s.NodeByID(e.ctx, a, d.ID); err != nil || !n.IsDir {
		t.Fatalf("folder by id: %+v, %v", n, err)
	}
	_, errOther := e.s.NodeByID(e.ctx, b, f.ID)
	wantKind(t, "another user's id", errOther, errs.NotFound)
	_, errNone := e.s.NodeByID(e.ctx, a, f.ID+1000)
	wantKind(t, "an unknown id", errNone, errs.NotFound)
	if errs.Message(errOther) != errs.Message(errNone) {
		t.Fatalf("another user's id (%q) answers unlike an unknown one (%q)", errs.Message(errOther), errs.Message(errNone))
	}
	g := e.commit(a, "/d/f.jpg", chunk("b", 20))
	n, err = e.s.NodeByID(e.ctx, a, g.ID)
	e.must(err)
	if n.FileHash != g.FileHash || n.Size != 20 {
		t.Fatalf("after a new version: %+v", n)
	}
	e.must(e.s.Remove(e.ctx, a, "/d"))
	_, errTrash := e.s.NodeByID(e.ctx, a, g.ID)
	wantKind(t, "a node in the trash", errTrash, errs.NotFound)
}
