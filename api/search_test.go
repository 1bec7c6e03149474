package api_test

import (
	"net/url"
	"strings"
	"testing"

	"netdisk/apitype"
)

// GET /api/v1/search pages a user's matches newest first with its cursor,
// and refuses bad input with 400 and the code "invalid", one line each.
func TestSearchAPI(t *testing.T) {
	x := start(t)
	x.addUser("sue", 0)
	for _, p := range []string{"/a-note.txt", "/b-note.txt", "/c-note.txt"} {
		x.sendAll("sue", p, []byte("x"))
	}
	var got []string
	cursor := ""
	for pages := 0; pages < 5; pages++ {
		var res apitype.SearchResult
		q := url.Values{"q": {"NOTE"}, "limit": {"2"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		if st := x.call("sue", "GET", "/api/v1/search?"+q.Encode(), nil, &res); st != 200 {
			t.Fatalf("search: %d", st)
		}
		for _, n := range res.Hits {
			got = append(got, n.Path)
		}
		if cursor = res.Next; cursor == "" {
			break
		}
	}
	if strings.Join(got, " ") != "/c-note.txt /b-note.txt /a-note.txt" {
		t.Errorf("pages: %v, want newest first, each once", got)
	}
	var res apitype.SearchResult
	if st := x.call("admin", "GET", "/api/v1/search?q=note", nil, &res); st != 200 || len(res.Hits) != 0 {
		t.Errorf("another user's search: %d %+v, want nothing of sue's", st, res)
	}
	for _, q := range []string{"", "q=", "q=x&glob=2", "q=x&limit=0", "q=x&limit=1001", "q=x&limit=ten", "q=x&cursor=nope", "q=x&under=..%2F.."} {
		resp, body := x.send("sue", "pw-sue", "GET", "/api/v1/search?"+q, nil, 0, nil)
		if resp.StatusCode != 400 || errorCode(t, body) != "invalid" || strings.Count(strings.TrimSpace(body), "\n") != 0 {
			t.Errorf("search?%s: %d %s, want 400 invalid", q, resp.StatusCode, body)
		}
	}
}

// The search of the API reaches into the folders shared with the user,
// read-only ones included, at the user's paths (their entry renamed: the
// owner's folder name never shows), paged, each node once; nothing of the
// owner's outside the share.
func TestSearchAPIInsideShares(t *testing.T) {
	x := start(t)
	x.addUser("ann", 0)
	x.addUser("ben", 0)
	for _, p := range []string{"/proj", "/proj/deep"} {
		if st := x.call("ann", "POST", "/api/v1/fs/mkdir", map[string]any{"path": p}, nil); st != 201 {
			t.Fatalf("mkdir %s: %d", p, st)
		}
	}
	x.sendAll("ann", "/proj/plan.txt", []byte("a"))
	x.sendAll("ann", "/proj/deep/plan-b.txt", []byte("b"))
	x.sendAll("ann", "/secret-plan.txt", []byte("c"))
	x.sendAll("ben", "/plan-own.txt", []byte("d"))
	if st := x.call("ann", "POST", "/api/v1/user-shares", apitype.NewUserShare{Path: "/proj", User: "ben"}, nil); st != 201 {
		t.Fatalf("share: %d", st)
	}
	if st := x.call("ben", "POST", "/api/v1/fs/move", apitype.MoveRequest{From: "/proj", To: "/from-ann"}, nil); st >= 300 {
		t.Fatalf("rename the entry: %d", st)
	}
	var got []string
	cursor := ""
	for pages := 0; pages < 5; pages++ {
		var res apitype.SearchResult
		q := url.Values{"q": {"PLAN"}, "limit": {"2"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		if st := x.call("ben", "GET", "/api/v1/search?"+q.Encode(), nil, &res); st != 200 {
			t.Fatalf("search: %d", st)
		}
		for _, n := range res.Hits {
			got = append(got, n.Path)
		}
		if cursor = res.Next; cursor == "" {
			break
		}
	}
	if strings.Join(got, " ") != "/plan-own.txt /from-ann/deep/plan-b.txt /from-ann/plan.txt" {
		t.Errorf("ben's search: %v, want his file and the share's two, newest first, each once", got)
	}
	var res apitype.SearchResult
	if st := x.call("ben", "GET", "/api/v1/search?q=b.txt&under=%2Ffrom-ann%2Fdeep", nil, &res); st != 200 || len(res.Hits) != 1 || res.Hits[0].Path != "/from-ann/deep/plan-b.txt" {
		t.Errorf("ben's search under the share: %d %+v", st, res)
	}
}
