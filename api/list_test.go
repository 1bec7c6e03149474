package api_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"netdisk/apitype"
)

// GET /api/v1/fs/list pages a folder by name with limit and cursor while
// entries come and go between pages: each entry there throughout shows
// once, and the unpaged call (older clients) still answers the whole folder
// in one JSON document. Bad limits and cursors are 400.
func TestListPages(t *testing.T) {
	x := start(t)
	x.addUser("sue", 0)
	mkdir := func(p string) {
		t.Helper()
		if st := x.call("sue", "POST", "/api/v1/fs/mkdir", map[string]any{"path": p}, nil); st != 201 {
			t.Fatalf("mkdir %s: %d", p, st)
		}
	}
	mkdir("/big")
	var stable []string
	for i := 0; i < 25; i++ {
		name := fmt.Sprintf("n%03d", i)
		mkdir("/big/" + name)
		stable = append(stable, name)
	}
	seen := map[string]int{}
	cursor := ""
	pages := 0
	for ; pages < 100; pages++ {
		q := url.Values{"path": {"/big"}, "limit": {"4"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var l apitype.Listing
		if st := x.call("sue", "GET", "/api/v1/fs/list?"+q.Encode(), nil, &l); st != 200 {
			t.Fatalf("page %d: %d", pages, st)
		}
		if len(l.Entries) > 4 || l.Path != "/big" {
			t.Fatalf("page %d: %d entries of %q", pages, len(l.Entries), l.Path)
		}
		for _, n := range l.Entries {
			seen[n.Name]++
		}
		if cursor = l.Next; cursor == "" {
			break
		}
		// Names before and after the cursor come and go between pages.
		mkdir(fmt.Sprintf("/big/a%d", pages))
		mkdir(fmt.Sprintf("/big/z%d", pages))
		if pages > 0 {
			if st := x.call("sue", "DELETE", fmt.Sprintf("/api/v1/fs?path=/big/z%d", pages-1), nil, nil); st != 204 {
				t.Fatalf("delete: %d", st)
			}
		}
	}
	if pages < 6 {
		t.Fatalf("%d pages of 4 for 25+ entries", pages+1)
	}
	for _, n := range stable {
		if seen[n] != 1 {
			t.Errorf("%s listed %d times, want once", n, seen[n])
		}
	}
	for n, k := range seen {
		if k != 1 {
			t.Errorf("%s listed %d times", n, k)
		}
	}

	var all apitype.Listing
	if st := x.call("sue", "GET", "/api/v1/fs/list?path=/big", nil, &all); st != 200 {
		t.Fatalf("unpaged: %d", st)
	}
	if all.Next != "" || len(all.Entries) != 25+pages+1 || all.Entries[0].Name != "a0" || all.Entries[len(all.Entries)-1].Path != fmt.Sprintf("/big/z%d", pages-1) {
		t.Fatalf("unpaged: %d entries, next %q", len(all.Entries), all.Next)
	}
	var empty apitype.Listing
	if st := x.call("sue", "GET", "/api/v1/fs/list?path=/big/n000&limit=5", nil, &empty); st != 200 || len(empty.Entries) != 0 || empty.Next != "" {
		t.Fatalf("empty folder: %d %+v", st, empty)
	}
	if st := x.call("sue", "GET", "/api/v1/fs/list?path=/big/n000&limit=5", nil, nil); st != 200 {
		t.Fatal(st)
	}
	for q, want := range map[string]int{
		"path=/big&limit=0":        400,
		"path=/big&limit=ten":      400,
		"path=/big&cursor=%21%21":  400,
		"path=/nope&limit=5":       404,
		"path=/nope":               404,
		"path=/big&limit=99999999": 200,
	} {
		resp, body := x.send("sue", "pw-sue", "GET", "/api/v1/fs/list?"+q, nil, 0, nil)
		if resp.StatusCode != want || (want != 200 && strings.Count(strings.TrimSpace(body), "\n") != 0) {
			t.Errorf("list?%s: %d %s, want %d", q, resp.StatusCode, body, want)
		}
	}
}
