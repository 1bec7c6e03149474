package metatest

import (
	"path"
	"testing"
	"time"
)

// Every change at any depth changes the TreeSeq of every folder above it,
// up to the root, and of no folder beside it: sync clients walk only the
// folders whose ETag (which holds TreeSeq) changed.
func testTreeSeq(t *testing.T, e *env) {
	a := e.user("a", 0)
	e.mkdir(a, "/x")
	e.mkdir(a, "/x/y")
	e.mkdir(a, "/x/y/z")
	e.mkdir(a, "/side")
	e.mkdir(a, "/dst")
	above := []string{"/", "/x", "/x/y", "/x/y/z"}
	// Stat, the listing of a folder and the listing of a tree agree.
	seqs := func(ps ...string) map[string]int64 {
		t.Helper()
		m := map[string]int64{}
		for _, p := range ps {
			m[p] = e.stat(a, p).TreeSeq
			if p == "/" {
				continue
			}
			_, kids, err := e.s.ListDir(e.ctx, a, path.Dir(p))
			e.must(err)
			for _, k := range kids {
				if k.Path == p && k.TreeSeq != m[p] {
					t.Fatalf("TreeSeq of %s: %d by Stat, %d listed", p, m[p], k.TreeSeq)
				}
			}
		}
		return m
	}
	all := append(append([]string{}, above...), "/side", "/dst")
	step := func(what string, changed []string, fn func()) {
		t.Helper()
		before := seqs(all...)
		fn()
		after := seqs(all...)
		for _, p := range all {
			moved := after[p] != before[p]
			want := false
			for _, c := range changed {
				want = want || c == p
			}
			if moved != want {
				t.Errorf("%s: TreeSeq of %s went %d → %d (changed: %v, want changed: %v)", what, p, before[p], after[p], moved, want)
			}
		}
	}
	t0 := time.Unix(1_700_000_000, 0)
	step("create a file deep down", above, func() { e.commit(a, "/x/y/z/f", chunk("f", 3)) })
	step("replace it", above, func() { e.commit(a, "/x/y/z/f", chunk("g", 4)) })
	step("set its time", above, func() { e.must(e.s.SetModTime(e.ctx, a, "/x/y/z/f", t0)) })
	step("set its mode", above, func() { e.must(e.s.SetMode(e.ctx, a, "/x/y/z/f", 0o600)) })
	step("make a folder", above, func() { e.mkdir(a, "/x/y/z/sub") })
	step("move a file out", append(above, "/dst"), func() { e.must(e.s.Move(e.ctx, a, "/x/y/z/f", "/dst/f", false)) })
	all = []string{"/", "/x", "/x/y", "/x/y/z", "/side"}
	step("move a folder in", []string{"/", "/x", "/x/y"}, func() { e.must(e.s.Move(e.ctx, a, "/dst", "/x/y/dst", false)) })
	all = append(all, "/x/y/dst")
	step("change inside the moved folder", []string{"/", "/x", "/x/y", "/x/y/dst"}, func() { e.commit(a, "/x/y/dst/f", chunk("h", 5)) })
	step("copy a folder", []string{"/", "/x", "/x/y", "/x/y/z"}, func() { e.must(e.s.Copy(e.ctx, a, "/x/y/dst", "/x/y/z/cp", false, true)) })
	step("remove (to the trash)", []string{"/", "/x", "/x/y", "/x/y/z"}, func() { e.must(e.s.Remove(e.ctx, a, "/x/y/z/cp")) })
	step("nothing", nil, func() { e.stat(a, "/x/y/z") })

	// Another user's changes move none of a's.
	b := e.user("b", 0)
	e.mkdir(b, "/x")
	step("another user's change", nil, func() { e.commit(b, "/x/f", chunk("b", 1)) })
}
