package meta

import (
	"context"
	"strings"
	"testing"
)

// TestListingPlans pins how SQLite answers the queries of a folder listing
// (PROPFIND Depth 1): index searches bounded by the folder, never a scan of
// the user's whole tree, and the children from the covering index alone.
func TestListingPlans(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	plan := func(q string, args ...any) string {
		t.Helper()
		rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			out = append(out, detail)
		}
		return strings.Join(out, "\n")
	}
	if p := plan(listDirQuery, 1, "/d"); p != "SEARCH nodes USING COVERING INDEX nodes_children (user_id=? AND parent=?)" {
		t.Errorf("ListDir plan:\n%s\nwant one search of the covering index nodes_children", p)
	}
	p := plan(propsChildrenQuery, 1, "/d", 1, "/d")
	for _, want := range []string{"(user_id=? AND parent=?)", "(user_id=? AND path=?)", "PRIMARY KEY (node_id=?)"} {
		if !strings.Contains(p, want) {
			t.Errorf("PropsUnder plan:\n%s\nlacks %s", p, want)
		}
	}
	if strings.Contains(p, "SCAN") || strings.Contains(p, "(user_id=?)\n") || strings.HasSuffix(p, "(user_id=?)") {
		t.Errorf("PropsUnder plan:\n%s\nreads more than the folder", p)
	}
}
