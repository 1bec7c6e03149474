package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"netdisk/api"
	"netdisk/testutil"
)

// TestCrossOriginRefused: a state-changing request a browser sends for
// another origin (by Sec-Fetch-Site or Origin) is refused whatever the
// credentials, and changes nothing; clients that send neither header, and
// the daemon's own origin, are unaffected.
func TestCrossOriginRefused(t *testing.T) {
	d := testutil.StartDaemon(t)
	do := func(method, path, body string, hdr map[string]string) (int, string) {
		t.Helper()
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range hdr {
			h[k] = v
		}
		resp, err := d.Do(context.Background(), method, path, "admin", d.AdminPass, []byte(body), h)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	other := strings.Replace(d.URL, "127.0.0.1:", "127.0.0.1:1", 1) // another port: same site, another origin
	foreign := []map[string]string{
		{"Origin": "http://evil.example"},
		{"Origin": "null"},
		{"Origin": other},
		{"Origin": strings.Replace(d.URL, "127.0.0.1", "localhost", 1)},
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site"},
		{"Sec-Fetch-Site": "cross-site", "Origin": d.URL}, // the browser's verdict wins
		{"Sec-Fetch-Site": "something-new"},
	}
	changes := []struct{ method, path, body string }{
		{"POST", "/api/v1/admin/users", `{"name":"mallory","password":"mallory-pw","isAdmin":true}`},
		{"POST", "/api/v1/fs/mkdir", `{"path":"/csrf"}`},
		{"POST", "/api/v1/admin/gc", ""},
		{"PUT", "/api/v1/file/upload?path=/csrf.txt", "x"},
		{"DELETE", "/api/v1/fs?path=/keep&recursive=true", ""},
		{"PUT", "/dav/csrf.txt", "x"},
		{"MKCOL", "/dav/csrf", ""},
		{"DELETE", "/dav/keep", ""},
		{"DELETE", "/api/v1/trash", ""},
		{"POST", "/api/v1/trash/restore", `{"path":"/keep"}`},
		{"POST", "/web/logout", ""},
	}
	if st, b := do("MKCOL", "/dav/keep", "", nil); st != 201 {
		t.Fatalf("MKCOL /dav/keep: %d %s", st, b)
	}
	for _, c := range changes {
		for _, h := range foreign {
			st, b := do(c.method, c.path, c.body, h)
			if st != http.StatusForbidden {
				t.Errorf("%s %s with %v: %d %.200s, want 403", c.method, c.path, h, st, b)
				continue
			}
			if strings.HasPrefix(c.path, "/api/") || strings.HasPrefix(c.path, "/web/") {
				var e struct{ Code string }
				if json.Unmarshal([]byte(b), &e) != nil || e.Code != "permission_denied" {
					t.Errorf("%s %s with %v: body %q, want the API's permission_denied", c.method, c.path, h, b)
				}
			}
		}
	}
	for _, p := range []string{"/dav/csrf.txt", "/dav/csrf", "/dav/keep"} {
		resp, err := d.Do(context.Background(), "PROPFIND", p, "admin", d.AdminPass, nil, map[string]string{"Depth": "0"})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{true: 207, false: 404}[p == "/dav/keep"]; resp.StatusCode != want {
			t.Errorf("after the refused requests, PROPFIND %s: %d, want %d", p, resp.StatusCode, want)
		}
	}
	if st, _ := do("GET", "/api/v1/admin/users/mallory", "", nil); st != 404 {
		t.Errorf("a refused request created mallory: GET %d", st)
	}
	// Not a browser (no header), the daemon's own page, the user's own
	// navigation: accepted.
	for i, h := range []map[string]string{nil, {"Origin": d.URL}, {"Sec-Fetch-Site": "same-origin", "Origin": d.URL}, {"Sec-Fetch-Site": "none"}} {
		path := "/api/v1/fs/mkdir"
		if st, b := do("POST", path, `{"path":"/ok`+string(rune('a'+i))+`"}`, h); st != 201 {
			t.Errorf("POST %s with %v: %d %s, want 201", path, h, st, b)
		}
	}
	// The API answers no other site, GETs included (some act: an agent's
	// event stream registers the agent); a file's URL may be linked from
	// anywhere.
	for _, h := range []map[string]string{{"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}} {
		if st, _ := do("GET", "/api/v1/async/agent/events?agent=csrf", "", h); st != 403 {
			t.Errorf("GET agent events with %v: %d, want 403", h, st)
		}
		if st, _ := do("GET", "/dav/keep", "", h); st == 403 {
			t.Errorf("GET /dav/ with %v: 403, want the link to work", h)
		}
	}
	if st, _ := do("GET", "/api/v1/quota", "", map[string]string{"Sec-Fetch-Site": "same-origin"}); st != 200 {
		t.Errorf("same-origin GET: %d, want 200", st)
	}
}

// TestPostNeedsJSON: every POST endpoint of the API refuses a body a
// cross-site form could send (form, multipart, text/plain, none declared)
// before it acts; a POST without a body needs no type; PUT and DELETE,
// which no page can send to another origin without a preflight, are the
// only other state-changing methods of the API.
func TestPostNeedsJSON(t *testing.T) {
	d := testutil.StartDaemon(t)
	routes := api.New(nil, nil).Routes()
	posts := 0
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		switch method {
		case "GET", "PUT", "DELETE":
			continue
		case "POST":
		default:
			t.Errorf("route %q: a method a cross-site page might send without a preflight?", rt.Pattern)
			continue
		}
		posts++
		path = strings.ReplaceAll(path, "{name}", "someone")
		for _, ct := range []string{"text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
			"multipart/form-data; boundary=x", "application/jsonx", ""} {
			hdr := map[string]string{"Content-Type": ct}
			resp, err := d.Do(context.Background(), "POST", path, "admin", d.AdminPass, []byte(`{"name":"mallory","password":"mallory-pw"}`), hdr)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e struct{ Error, Code string }
			json.Unmarshal(b, &e)
			if resp.StatusCode != 400 || e.Code != "invalid" || !strings.Contains(e.Error, "Content-Type") {
				t.Errorf("POST %s as %q: %d %s, want 400 invalid naming Content-Type", path, ct, resp.StatusCode, b)
			}
		}
	}
	if posts < 10 {
		t.Fatalf("only %d POST routes found", posts)
	}
	resp, err := d.Do(context.Background(), "GET", "/api/v1/admin/users/mallory", "admin", d.AdminPass, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("a refused POST created mallory: %d", resp.StatusCode)
	}
	// Bodiless POSTs with no type, and JSON with parameters, pass.
	resp, err = d.Do(context.Background(), "POST", "/api/v1/admin/gc", "admin", d.AdminPass, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("POST admin/gc without a body: %d, want 200", resp.StatusCode)
	}
	resp, err = d.Do(context.Background(), "POST", "/api/v1/fs/mkdir", "admin", d.AdminPass, []byte(`{"path":"/j"}`),
		map[string]string{"Content-Type": "application/json; charset=utf-8"})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Errorf("POST mkdir as application/json; charset=utf-8: %d, want 201", resp.StatusCode)
	}
}
