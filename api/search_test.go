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
