package metatest

import (
	"fmt"
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

	testTreeSeqSubtree(t, e, a)

	// Another user's changes move none of a's.
	b := e.user("b", 0)
	e.mkdir(b, "/x")
	step("another user's change", nil, func() { e.commit(b, "/x/f", chunk("b", 1)) })
}

// A statement over a whole subtree (a folder's move, its trip to the trash
// and back, the trash taking back a folder deleted from under it) changes
// the chains above the subtree's old and new places once each, whatever the
// subtree holds, and no folder inside it: its entries keep their ids and
// their own ETags.
func testTreeSeqSubtree(t *testing.T, e *env, a int64) {
	e.mkdir(a, "/n")
	e.mkdir(a, "/n/t")
	e.mkdir(a, "/m")
	e.mkdir(a, "/quiet")
	inner := []string{"", "/b", "/b/deep", "/c"}
	for _, d := range inner[1:] {
		e.mkdir(a, "/n/t"+d)
	}
	for i := range 6 {
		for _, d := range inner {
			e.commit(a, fmt.Sprintf("/n/t%s/f%d", d, i), chunk(fmt.Sprintf("%s%d", d, i), 1))
		}
	}
	seq := func(p string) int64 { return e.stat(a, p).TreeSeq }
	snap := func(ps []string) []int64 {
		out := make([]int64, len(ps))
		for i, p := range ps {
			out[i] = seq(p)
		}
		return out
	}
	// chains: the folders that change, by a few bumps whatever the subtree
	// holds (the top's move and its folders' new times, per chain through
	// them: at most four); still: those that must not change.
	check := func(what string, chains []string, b4 []int64, still []string, s4 []int64) {
		t.Helper()
		for i, p := range chains {
			if d := seq(p) - b4[i]; d < 1 || d > 4 {
				t.Errorf("%s: TreeSeq of %s went up by %d, want 1 to 4 (not one per entry moved)", what, p, d)
			}
		}
		for i, p := range still {
			if got := seq(p); got != s4[i] {
				t.Errorf("%s: TreeSeq of %s went %d → %d, want unchanged", what, p, s4[i], got)
			}
		}
	}
	under := func(top string, ds []string) []string {
		out := make([]string, len(ds))
		for i, d := range ds {
			out[i] = top + d
		}
		return out
	}

	item := func(p string) int64 {
		t.Helper()
		for _, it := range e.trash(a) {
			if it.Path == p {
				return it.ID
			}
		}
		t.Fatalf("%s is not in the trash: %+v", p, e.trash(a))
		return 0
	}

	chains := []string{"/", "/n", "/m"}
	b4, s4 := snap(chains), snap(append(under("/n/t", inner), "/quiet"))
	e.must(e.s.Move(e.ctx, a, "/n/t", "/m/t", false))
	check("move a folder", chains, b4, append(under("/m/t", inner), "/quiet"), s4)

	chains = []string{"/", "/m"}
	b4, s4 = snap(chains), snap(append(under("/m/t", inner), "/quiet"))
	e.must(e.s.Move(e.ctx, a, "/m/t", "/m/u", false))
	check("rename a folder", chains, b4, append(under("/m/u", inner), "/quiet"), s4)

	// To the trash and back: the folders inside come back as they went.
	b4, s4 = snap(chains), snap(append(under("/m/u", inner), "/quiet"))
	e.must(e.s.Remove(e.ctx, a, "/m/u"))
	check("remove a folder (to the trash)", chains, b4, []string{"/quiet"}, s4[len(s4)-1:])
	b4 = snap(chains)
	if _, err := e.restore(a, item("/m/u")); err != nil {
		t.Fatal(err)
	}
	check("restore it", chains, b4, append(under("/m/u", inner), "/quiet"), s4)

	// A subfolder trashed first is folded back into its folder's item when
	// the folder goes: the subfolder's subtree moves within the trash, and
	// comes back with the folder unchanged; the folder itself changed (its
	// child went and came back).
	c4 := snap([]string{"/m/u/b", "/m/u/b/deep"})
	e.must(e.s.Remove(e.ctx, a, "/m/u/b"))
	e.must(e.s.Remove(e.ctx, a, "/m/u"))
	b4, s4 = snap(chains), snap([]string{"/quiet"})
	if _, err := e.restore(a, item("/m/u")); err != nil {
		t.Fatal(err)
	}
	check("restore a folder with a folded subfolder", chains, b4, append([]string{"/m/u/b", "/m/u/b/deep"}, "/quiet"), append(c4, s4...))
}
