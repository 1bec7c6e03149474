package metatest

import (
	"testing"

	"netdisk/chunker"
	"netdisk/meta"
)

// testOwnFileWithContent: of a user's files sharing one MD5-made file hash
// (an MD5 collision: a‖s and b‖s), the one with the asked SHA-256 name is
// found, whichever was stored first; copies count once; another user's
// file, a file in the trash and an unknown name are not found.
func testOwnFileWithContent(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	s := chunk("s", 4)
	ca, cb := meta.Chunk{SHA256: "sha-a", MD5: "md5-ab", Size: 4}, meta.Chunk{SHA256: "sha-b", MD5: "md5-ab", Size: 4}
	name := func(cs ...meta.Chunk) string {
		var shas []string
		for _, c := range cs {
			shas = append(shas, c.SHA256)
		}
		return chunker.FileSHA256(shas)
	}
	e.commit(b, "/a", ca, s)
	fb := e.commit(a, "/b", cb, s)
	fa := e.commit(a, "/a", ca, s)
	e.commit(a, "/a2", ca, s)
	if fa.FileHash != fb.FileHash {
		t.Fatalf("the fixture's files should share a file hash: %q, %q", fa.FileHash, fb.FileHash)
	}
	for _, c := range []struct {
		name string
		uid  int64
		sha  string
		want int64
	}{
		{"a's bytes", a, name(ca, s), fa.ID},
		{"b's bytes", a, name(cb, s), fb.ID},
		{"bytes nobody has", a, name(s, s), 0},
		{"bytes only another user has", b, name(cb, s), 0},
	} {
		id, found, err := e.s.OwnFileWithContent(e.ctx, c.uid, fa.FileHash, 8, c.sha)
		if err != nil || found != (c.want != 0) || id != c.want {
			t.Errorf("%s: id %d found %v %v, want %d", c.name, id, found, err, c.want)
		}
	}
	e.must(e.s.Remove(e.ctx, a, "/b"))
	if _, found, err := e.s.OwnFileWithContent(e.ctx, a, fa.FileHash, 8, name(cb, s)); err != nil || found {
		t.Errorf("a file in the trash found: %v %v", found, err)
	}
}

// testFileWithContentAt: a user's file with the content is found at the
// path asked or below it (a shared file or folder), never beside it (a
// sibling whose name starts the same) nor in another user's tree.
func testFileWithContentAt(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	c := chunk("c", 4)
	name := chunker.FileSHA256([]string{c.SHA256})
	e.mkdir(a, "/d")
	e.mkdir(a, "/d/sub")
	e.mkdir(a, "/d2")
	e.mkdir(a, "/d-x")
	in := e.commit(a, "/d/sub/in", c)
	e.commit(a, "/d2/beside", c)
	e.commit(a, "/d-x/beside", c)
	e.mkdir(b, "/d")
	e.commit(b, "/d/other", c)
	for _, q := range []struct {
		at   string
		want int64
	}{{"/d", in.ID}, {"/d/sub", in.ID}, {"/d/sub/in", in.ID}, {"/d/s", 0}, {"/d/sub/in2", 0}} {
		id, found, err := e.s.FileWithContentAt(e.ctx, a, q.at, in.FileHash, 4, name)
		if err != nil || found != (q.want != 0) || id != q.want {
			t.Errorf("at %s: id %d found %v %v, want %d", q.at, id, found, err, q.want)
		}
	}
	e.must(e.s.Remove(e.ctx, a, "/d/sub"))
	if _, found, err := e.s.FileWithContentAt(e.ctx, a, "/d", in.FileHash, 4, name); err != nil || found {
		t.Errorf("a file in the trash found: %v %v", found, err)
	}
}
