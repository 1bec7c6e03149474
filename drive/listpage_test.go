package drive_test

import (
	"context"
	"strings"
	"testing"

	"netdisk/meta"
)

// pages lists uid's folder p a page of limit at a time.
func pages(t *testing.T, f *fixture, uid int64, p string, limit int) []meta.Node {
	t.Helper()
	var out []meta.Node
	after := ""
	for i := 0; ; i++ {
		ns, next, err := f.d.ListPage(context.Background(), uid, p, after, limit)
		must(t, err)
		if len(ns) > limit {
			t.Fatalf("page %d: %d entries for limit %d", i, len(ns), limit)
		}
		out = append(out, ns...)
		if next == "" {
			return out
		}
		if next <= after {
			t.Fatalf("page %d: cursor %q does not move past %q", i, next, after)
		}
		after = next
	}
}

// A share's entry in the recipient's root shows once across pages, as the
// shared folder at the entry's name, wherever the page boundaries fall; the
// pages through the share are the shared folder's children in the
// recipient's view; an entry whose share ended is gone from every page.
func TestListPagesWithShares(t *testing.T) {
	f, s := shareFixture(t, false)
	ctx := context.Background()
	b := f.b.ID
	for _, name := range []string{"/a", "/docs0", "/docr", "/z"} {
		_, err := f.d.Mkdir(ctx, b, name)
		must(t, err)
	}
	shared, err := f.d.Stat(ctx, f.a.ID, "/docs")
	must(t, err)
	for limit := 1; limit <= 7; limit++ {
		ns := pages(t, f, b, "/", limit)
		var names []string
		for _, n := range ns {
			names = append(names, n.Path)
			if n.Path == "/docs" && n.ID != shared.ID {
				t.Fatalf("limit %d: the entry shows as %+v, not alice's folder", limit, n)
			}
		}
		if got := strings.Join(names, " "); got != "/a /docr /docs /docs0 /own.txt /z" {
			t.Fatalf("limit %d: bob's root %v", limit, got)
		}
	}
	var below []string
	for _, n := range pages(t, f, b, "/docs", 1) {
		below = append(below, n.Path)
	}
	if got := strings.Join(below, " "); got != "/docs/a.txt /docs/sub" {
		t.Fatalf("through the share: %v", got)
	}
	must(t, f.d.Unshare(ctx, f.a.ID, s.ID))
	for limit := 1; limit <= 3; limit++ {
		var names []string
		for _, n := range pages(t, f, b, "/", limit) {
			names = append(names, n.Path)
		}
		if got := strings.Join(names, " "); got != "/a /docr /docs0 /own.txt /z" {
			t.Fatalf("limit %d after the share ended: %v", limit, got)
		}
	}
}
