package metatest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"netdisk/meta"
)

// RunNameSearch runs the name-search case alone (Run includes it), for a
// store configured to reach its index sooner than a small tree would.
func RunNameSearch(t *testing.T, open Open) {
	testNameSearch(t, newEnv(t, open))
}

// search pages through every hit of q with pages of size, checking that
// pages come newest first (ties by id), with no node twice.
func (e *env) search(uid int64, q meta.NameQuery, size int) []string {
	e.t.Helper()
	q.Limit = size
	var out []string
	seen := map[int64]bool{}
	var last *meta.Node
	for pages := 0; ; pages++ {
		if pages > 1000 {
			e.t.Fatalf("search %+v never ends", q)
		}
		hits, more, err := e.s.SearchNames(e.ctx, uid, q)
		e.must(err)
		if len(hits) > size || (more && len(hits) == 0) {
			e.t.Fatalf("search %+v: a page of %d (more %v) for limit %d", q, len(hits), more, size)
		}
		for _, n := range hits {
			if seen[n.ID] {
				e.t.Fatalf("search %+v: %s twice", q, n.Path)
			}
			seen[n.ID] = true
			if last != nil {
				a, b := meta.PosOf(*last), meta.PosOf(n)
				if a.MTime < b.MTime || (a.MTime == b.MTime && a.ID <= b.ID) {
					e.t.Fatalf("search %+v: %s (%v) before %s (%v), not newest first", q, last.Path, a, n.Path, b)
				}
			}
			last = &n
			out = append(out, n.Path)
		}
		if !more {
			return out
		}
		q.After = meta.PosOf(hits[len(hits)-1])
	}
}

func (e *env) wantSearch(uid int64, q meta.NameQuery, want ...string) {
	e.t.Helper()
	got := e.search(uid, q, 2)
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if !same(g, w) {
		e.t.Errorf("search %q glob=%v under %q: %q, want %q", q.Pattern, q.Glob, q.Under, got, want)
	}
}

func testNameSearch(t *testing.T, e *env) {
	a := e.user("alice", 0)
	b := e.user("bob", 0)
	tick := func() { e.clock.Advance(time.Second) }
	e.mkdir(a, "/Docs")
	tick()
	e.mkdir(a, "/Docs/Reports")
	for i := range 9 {
		tick()
		e.commit(a, fmt.Sprintf("/Docs/Reports/report-%d.txt", i), chunk(fmt.Sprint("r", i), 1))
	}
	// Three of one time: the order falls back on ids, and pages must still
	// neither repeat nor skip.
	for _, p := range []string{"/Docs/x-report.md", "/Docs/y-report.md", "/Docs/z-report.md"} {
		e.commit(a, p, chunk(p, 1))
	}
	names := []string{
		"100%_done.txt", "a_b.txt", "axb.txt", `a\b.txt`, "[x].txt", "x.txt", "what?.txt", "whatX.txt",
		"Café.PDF", "RÉSUMÉ.doc", "ΣΟΦΙΑ.txt", "\u212Aelvin.txt", "日本語のファイル.txt", "ab", "b",
	}
	for _, n := range names {
		tick()
		e.commit(a, "/"+n, chunk(n, 1))
	}
	e.commit(b, "/report-bob.txt", chunk("bob", 1))
	e.mkdir(b, "/Reports")

	var reports []string
	for i := range 9 {
		reports = append(reports, fmt.Sprintf("/Docs/Reports/report-%d.txt", i))
	}
	all := append(slices.Clone(reports), "/Docs/Reports", "/Docs/x-report.md", "/Docs/y-report.md", "/Docs/z-report.md")
	e.wantSearch(a, meta.NameQuery{Pattern: "report"}, all...)
	e.wantSearch(a, meta.NameQuery{Pattern: "REPORT"}, all...)
	e.wantSearch(a, meta.NameQuery{Pattern: "report", FilesOnly: true}, slices.DeleteFunc(slices.Clone(all), func(p string) bool { return p == "/Docs/Reports" })...)
	e.wantSearch(a, meta.NameQuery{Pattern: "report-?.txt", Glob: true}, reports...)
	e.wantSearch(a, meta.NameQuery{Pattern: "*.MD", Glob: true}, "/Docs/x-report.md", "/Docs/y-report.md", "/Docs/z-report.md")
	e.wantSearch(a, meta.NameQuery{Pattern: "report", Glob: true}) // a glob is the whole name
	e.wantSearch(a, meta.NameQuery{Pattern: "report", Under: "/Docs/Reports"}, reports...)
	e.wantSearch(b, meta.NameQuery{Pattern: "report"}, "/report-bob.txt", "/Reports")
	e.wantSearch(a, meta.NameQuery{Pattern: "po"}, all...) // two characters
	e.wantSearch(a, meta.NameQuery{Pattern: "b"}, "/a_b.txt", "/axb.txt", `/a\b.txt`, "/ab", "/b")

	// Only '*' and '?' of a glob are wildcards: SQL's and other globs' are literal.
	e.wantSearch(a, meta.NameQuery{Pattern: "%"}, "/100%_done.txt")
	e.wantSearch(a, meta.NameQuery{Pattern: "_"}, "/100%_done.txt", "/a_b.txt")
	e.wantSearch(a, meta.NameQuery{Pattern: "a_b*", Glob: true}, "/a_b.txt")
	e.wantSearch(a, meta.NameQuery{Pattern: `\`}, `/a\b.txt`)
	e.wantSearch(a, meta.NameQuery{Pattern: `a\b.txt`, Glob: true}, `/a\b.txt`)
	e.wantSearch(a, meta.NameQuery{Pattern: "[x]*", Glob: true}, "/[x].txt")
	e.wantSearch(a, meta.NameQuery{Pattern: "[x]"}, "/[x].txt")
	e.wantSearch(a, meta.NameQuery{Pattern: "what?"}, "/what?.txt")
	e.wantSearch(a, meta.NameQuery{Pattern: "what?.txt", Glob: true}, "/what?.txt", "/whatX.txt")
	e.wantSearch(a, meta.NameQuery{Pattern: "*", Glob: true, Under: "/Docs/Reports"}, reports...)
	e.wantSearch(a, meta.NameQuery{Pattern: "?", Glob: true}, "/b")

	// Case folds beyond ASCII; a non-ASCII letter never matches an ASCII one.
	e.wantSearch(a, meta.NameQuery{Pattern: "CAFÉ.pdf"}, "/Café.PDF")
	e.wantSearch(a, meta.NameQuery{Pattern: "résumé"}, "/RÉSUMÉ.doc")
	e.wantSearch(a, meta.NameQuery{Pattern: "σοφια.TXT"}, "/ΣΟΦΙΑ.txt")
	e.wantSearch(a, meta.NameQuery{Pattern: "kelvin"})
	e.wantSearch(a, meta.NameQuery{Pattern: "\u212Aelvin"}, "/\u212Aelvin.txt")
	e.wantSearch(a, meta.NameQuery{Pattern: "のファ"}, "/日本語のファイル.txt")

	// Times bound the search strictly.
	r3 := e.stat(a, "/Docs/Reports/report-3.txt").ModTime
	r5 := e.stat(a, "/Docs/Reports/report-5.txt").ModTime
	e.wantSearch(a, meta.NameQuery{Pattern: "report-", ModifiedAfter: r3, ModifiedBefore: r5}, "/Docs/Reports/report-4.txt")

	// A folder's rename moves its descendants' hits; a file's rename
	// changes what finds it; a removal takes its subtree's hits.
	e.must(e.s.Move(e.ctx, a, "/Docs", "/Archive", false))
	moved := make([]string, len(reports))
	for i, p := range reports {
		moved[i] = "/Archive" + p[len("/Docs"):]
	}
	e.wantSearch(a, meta.NameQuery{Pattern: "report-?.txt", Glob: true}, moved...)
	e.wantSearch(a, meta.NameQuery{Pattern: "report", Under: "/Docs"})
	e.wantSearch(a, meta.NameQuery{Pattern: "docs"})
	e.wantSearch(a, meta.NameQuery{Pattern: "archive"}, "/Archive")
	e.must(e.s.Move(e.ctx, a, "/Archive/Reports/report-0.txt", "/Archive/Reports/summary.txt", false))
	e.wantSearch(a, meta.NameQuery{Pattern: "report-0"})
	e.wantSearch(a, meta.NameQuery{Pattern: "summary"}, "/Archive/Reports/summary.txt")
	e.must(e.s.Copy(e.ctx, a, "/Archive/Reports", "/Copied", false, true))
	e.wantSearch(a, meta.NameQuery{Pattern: "summary"}, "/Archive/Reports/summary.txt", "/Copied/summary.txt")
	e.must(e.s.Remove(e.ctx, a, "/Archive"))
	e.wantSearch(a, meta.NameQuery{Pattern: "report-?.txt", Glob: true}, "/Copied/report-1.txt", "/Copied/report-2.txt", "/Copied/report-3.txt",
		"/Copied/report-4.txt", "/Copied/report-5.txt", "/Copied/report-6.txt", "/Copied/report-7.txt", "/Copied/report-8.txt")

	// A user's deletion takes their hits, and a new user (a new id) finds
	// nothing of them.
	e.must(e.s.DeleteUser(e.ctx, b))
	e.wantSearch(b, meta.NameQuery{Pattern: "report"})
	c := e.user("carol", 0)
	e.wantSearch(c, meta.NameQuery{Pattern: "report"})
	e.wantSearch(c, meta.NameQuery{Pattern: "*", Glob: true})
}
