package metatest

import (
	"fmt"
	"reflect"
	"testing"

	"netdisk/errs"
)

// testOpenFile: OpenFile answers what Stat, FileChunks and ChunkData answer
// together, for every kind of node: a file of several chunks (the inline
// one among blobs carries its bytes, the others none), a one-chunk inline
// file, an empty file, a folder, a link, another user's path and a missing
// one.
func testOpenFile(t *testing.T, e *env) {
	a := e.user("alice", 0)
	b := e.user("bob", 0)
	small := chunk("s", 3)
	small.Data = []byte("abc")
	e.commit(a, "/small", small)
	// The inline chunk's record is shared: the big file's last chunk is
	// the same content, and must come back with its bytes there too.
	e.commit(a, "/big", chunk("b1", 10), chunk("b2", 10), chunk("s", 3))
	e.commit(a, "/empty")
	e.mkdir(a, "/dir")
	_, err := e.s.Symlink(e.ctx, a, "/link", "big", e.clock.Now())
	e.must(err)
	for _, p := range []string{"/small", "/big", "/empty", "/dir", "/link", "/"} {
		n, cs, err := e.s.OpenFile(e.ctx, a, p)
		e.must(err)
		if want := e.stat(a, p); !reflect.DeepEqual(n, want) {
			t.Errorf("OpenFile(%s) node = %+v, Stat = %+v", p, n, want)
		}
		want, err := e.s.FileChunks(e.ctx, n.ID)
		e.must(err)
		for i, c := range want {
			d, ok, err := e.s.ChunkData(e.ctx, c.SHA256)
			e.must(err)
			if ok {
				want[i].Data = d
			}
		}
		if fmt.Sprintf("%+v", cs) != fmt.Sprintf("%+v", want) {
			t.Errorf("OpenFile(%s) chunks = %+v, want %+v", p, cs, want)
		}
	}
	if _, cs, _ := e.s.OpenFile(e.ctx, a, "/big"); len(cs) != 3 || cs[2].Offset != 20 || string(cs[2].Data) != "abc" || cs[0].Data != nil {
		t.Errorf("OpenFile(/big) chunks = %+v: want offsets 0, 10, 20 and the inline bytes on the last only", cs)
	}
	for _, c := range []struct {
		uid int64
		p   string
	}{{a, "/missing"}, {b, "/small"}, {a, "/small/x"}} {
		_, _, err := e.s.OpenFile(e.ctx, c.uid, c.p)
		wantKind(t, fmt.Sprintf("OpenFile(%d, %s)", c.uid, c.p), err, errs.NotFound)
	}
	// A new version is read whole: the new chunks, never the old with the
	// new node.
	e.commit(a, "/big", chunk("c1", 4))
	n, cs, err := e.s.OpenFile(e.ctx, a, "/big")
	e.must(err)
	if n.Size != 4 || len(cs) != 1 || cs[0].SHA256 != "sha-c1" {
		t.Errorf("OpenFile after a new version = %+v %+v", n, cs)
	}
}
