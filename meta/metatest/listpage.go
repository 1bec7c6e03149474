package metatest

import (
	"fmt"
	"testing"

	"netdisk/errs"
	"netdisk/meta"
)

// testListPages pages through a folder while entries come and go between
// pages: every entry there from the first page to the last is listed
// exactly once, none twice, in byte order, and nothing from below the
// folder, beside it or of another user shows.
func testListPages(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	e.mkdir(a, "/d")
	// Byte order, not a locale's: upper case before lower, '-' and '.'
	// before digits, multi-byte names last.
	stable := []string{"B", "a", "a b", "a-", "a.", "a0", "ab", "z", "é", "日本"}
	for _, n := range stable {
		e.commit(a, "/d/"+n, chunk(n, 1))
	}
	e.mkdir(a, "/d/sub")
	stable = append(stable, "sub")
	e.commit(a, "/d/sub/below", chunk("below", 1))
	e.commit(a, "/d-x", chunk("dx", 1))
	e.commit(a, "/d0", chunk("d0", 1))
	e.mkdir(b, "/d")
	e.commit(b, "/d/bobs", chunk("bobs", 1))

	seen := map[string]int{}
	var order []string
	after, page, churn := "", 0, 0
	for {
		ns, err := e.s.ListPage(e.ctx, a, "/d", after, 3)
		e.must(err)
		if len(ns) > 4 {
			t.Fatalf("page %d: %d entries for limit 3", page, len(ns))
		}
		more := len(ns) > 3
		if more {
			ns = ns[:3]
		}
		for _, n := range ns {
			if n.UserID != a || n.Path != "/d/"+n.Name() {
				t.Fatalf("page %d: %+v is not alice's child of /d", page, n)
			}
			seen[n.Name()]++
			order = append(order, n.Name())
		}
		if !more {
			break
		}
		after = ns[len(ns)-1].Name()
		page++
		// Between pages: names before and after the cursor come and go.
		for _, n := range []string{fmt.Sprintf("A%d", churn), fmt.Sprintf("zz%d", churn), fmt.Sprintf("a%d", churn+1)} {
			e.commit(a, "/d/"+n, chunk(n, 1))
		}
		if churn > 0 {
			e.must(e.s.Remove(e.ctx, a, fmt.Sprintf("/d/zz%d", churn-1)))
		}
		churn++
	}
	for _, n := range stable {
		if seen[n] != 1 {
			t.Errorf("%q listed %d times, want once", n, seen[n])
		}
	}
	for n, k := range seen {
		if k != 1 {
			t.Errorf("%q listed %d times", n, k)
		}
	}
	for i := 1; i < len(order); i++ {
		if order[i-1] >= order[i] {
			t.Fatalf("not in byte order: %q before %q (%v)", order[i-1], order[i], order)
		}
	}
	if page < 3 {
		t.Fatalf("only %d pages: the test did not page", page+1)
	}

	// The last page says no more; a cursor past the end is an empty page.
	ns, err := e.s.ListPage(e.ctx, a, "/d", "\U0010FFFF", 3)
	if err != nil || len(ns) != 0 {
		t.Fatalf("page past the end = %v, %v", paths(ns), err)
	}
	_, err = e.s.ListPage(e.ctx, a, "/d/a", "", 3)
	wantKind(t, "ListPage of a file", err, errs.NotDir)
	_, err = e.s.ListPage(e.ctx, a, "/nope", "", 3)
	wantKind(t, "ListPage of nothing", err, errs.NotFound)
	root, err := e.s.ListPage(e.ctx, b, "/", "", 10)
	e.must(err)
	if !same(paths(root), []string{"/d"}) {
		t.Fatalf("bob's root = %v", paths(root))
	}
	var _ meta.Tree = e.s
}
