package metatest

import (
	"slices"
	"strings"
	"testing"
)

// testMultiByteFolders: a folder whose path holds letters of two, three and
// four bytes in UTF-8 (or has such a folder above it) moves, goes to the
// trash and comes back with every path below it whole. A subtree's paths
// are rewritten by cutting the old folder's path off their front: the cut
// must fall where that path ends, though the databases count characters
// and Go counts bytes.
func testMultiByteFolders(t *testing.T, e *env) {
	a := e.user("alice", 0)
	dirs := []string{"/sub", "/sub/deeper", "/ü"}
	files := []string{"/f", "/g", "/sub/f", "/sub/deeper/h", "/ü/x"}
	e.mkdir(a, "/plain")
	// tree lists what is below dir, relative, by the paths the store
	// keeps, after checking each folder's listing (by parent) agrees.
	tree := func(dir string) []string {
		t.Helper()
		ns, err := e.s.Tree(e.ctx, a, dir, 1000)
		e.must(err)
		var rel []string
		for _, n := range ns {
			if !strings.HasPrefix(n.Path, dir+"/") {
				t.Fatalf("the tree of %s holds %s", dir, n.Path)
			}
			rel = append(rel, strings.TrimPrefix(n.Path, dir))
			if n.IsDir {
				kids, err := e.s.List(e.ctx, a, n.Path)
				e.must(err)
				for _, k := range kids {
					if !strings.HasPrefix(k.Path, n.Path+"/") || strings.Contains(k.Path[len(n.Path)+1:], "/") {
						t.Fatalf("the listing of %s holds %s", n.Path, k.Path)
					}
				}
			}
		}
		slices.Sort(rel)
		return rel
	}
	want := slices.Sorted(slices.Values(append(slices.Clone(dirs), files...)))
	for i, top := range []string{"/café", "/中文 目录", "/emoji 📷", "/plain/ünïcödé"} {
		e.mkdir(a, top)
		for _, p := range dirs {
			e.mkdir(a, top+p)
		}
		for _, p := range files {
			e.commit(a, top+p, chunk(top+p, 1))
		}
		// Out of a multi-byte path, into one, and (the parents' paths cut
		// too) between two.
		steps := []string{top, "/moved", "/à " + strings.ReplaceAll(top[1:], "/", " "), "/plain/x"}
		for j := 1; j < len(steps); j++ {
			e.must(e.s.Move(e.ctx, a, steps[j-1], steps[j], false))
			if got := tree(steps[j]); !slices.Equal(got, want) {
				t.Fatalf("%d: after the move of %s to %s it holds %q, want %q", i, steps[j-1], steps[j], got, want)
			}
		}
		e.must(e.s.Move(e.ctx, a, "/plain/x", top, false))
		e.must(e.s.Remove(e.ctx, a, top))
		its := e.trash(a)
		if _, err := e.restore(a, its[0].ID); err != nil {
			t.Fatalf("restore of %s: %v", top, err)
		}
		if got := tree(top); !slices.Equal(got, want) {
			t.Fatalf("%s after a delete and a restore holds %q, want %q", top, got, want)
		}
	}
	if lines, err := e.s.CheckTrash(e.ctx); err != nil || len(lines) != 0 {
		t.Fatalf("CheckTrash: %q %v", lines, err)
	}
}
