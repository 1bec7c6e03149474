package api_test

import (
	"context"
	"strings"
	"testing"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/testutil"
)

// TestSetAttr: POST /api/v1/fs/setattr stores mode and mtime, refuses bits
// outside 0o7777 without changing anything, never reaches another user's
// tree, and a new version of a file keeps the mode; mkdir takes a mode.
func TestSetAttr(t *testing.T) {
	d := testutil.StartDaemon(t)
	ctx := context.Background()
	admin := client.New(d.URL, "admin", d.AdminPass)
	for _, u := range []string{"alice", "bob"} {
		if _, err := admin.AdminAddUser(ctx, apitype.NewUser{Name: u, Password: u + "-pass"}); err != nil {
			t.Fatal(err)
		}
	}
	alice := client.New(d.URL, "alice", "alice-pass")
	if _, err := alice.Upload(ctx, "/f", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	as := func(user, method, path, body string) (int, string) {
		return call(t, d, method, path, user, user+"-pass", body, nil)
	}
	for _, c := range []struct {
		user, method, path, body string
		want                     int
		msg                      string
		not                      string // must not appear (e.g. a refused change)
	}{
		{"alice", "GET", "/api/v1/fs/stat?path=/f", ``, 200, `"mode":420`, ``}, // default 0644
		{"alice", "POST", "/api/v1/fs/setattr", `{"path":"/f","mode":493}`, 200, `"mode":493`, ``},
		{"alice", "POST", "/api/v1/fs/setattr", `{"path":"/f","mode":2541}`, 200, `"mode":2541`, ``}, // 04755: stored, never acted on
		{"alice", "POST", "/api/v1/fs/setattr", `{"path":"/f","mode":4096,"mtime":"2001-02-03T04:05:06Z"}`, 400, `outside`, ``},
		{"alice", "GET", "/api/v1/fs/stat?path=/f", ``, 200, `"mode":2541`, `2001-`},
		{"alice", "POST", "/api/v1/fs/setattr", `{"path":"/f","mode":-1}`, 400, `bad JSON`, ``},
		{"alice", "POST", "/api/v1/fs/setattr", `{"path":"/f"}`, 400, `nothing to set`, ``},
		{"alice", "POST", "/api/v1/fs/setattr", `{"mode":420}`, 400, `path is required`, ``},
		{"alice", "POST", "/api/v1/fs/setattr", `{"path":"/../f","mode":420}`, 400, ``, ``},
		{"alice", "POST", "/api/v1/fs/setattr", `{"path":"/nope","mode":420}`, 404, ``, ``},
		{"bob", "POST", "/api/v1/fs/setattr", `{"path":"/f","mode":511}`, 404, ``, ``},
		{"bob", "POST", "/api/v1/fs/setmtime", `{"path":"/f","mtime":"2001-02-03T04:05:06Z"}`, 404, ``, ``},
		{"alice", "GET", "/api/v1/fs/stat?path=/f", ``, 200, `"mode":2541`, `2001-`}, // bob reached nothing
		{"alice", "POST", "/api/v1/fs/setattr", `{"path":"/f","mode":384,"mtime":"2001-02-03T04:05:06Z"}`, 200, `"mtime":"2001-02-03T04:05:06Z"`, ``},
		{"alice", "POST", "/api/v1/fs/setattr", `{"path":"/f","mode":0}`, 200, `"mode":0,`, ``},
		{"alice", "POST", "/api/v1/fs/setmtime", `{"path":"/f","mtime":"2002-02-03T04:05:06Z"}`, 200, `"mode":0,`, ``},
		{"alice", "POST", "/api/v1/fs/setattr", `{"path":"/","mode":448}`, 200, `"mode":448`, ``},
		{"alice", "POST", "/api/v1/fs/mkdir", `{"path":"/d","mode":488}`, 201, `"mode":488`, ``},
		{"alice", "POST", "/api/v1/fs/mkdir", `{"path":"/d","mode":488}`, 409, ``, ``},
		{"alice", "POST", "/api/v1/fs/mkdir", `{"path":"/d","mode":511,"parents":true}`, 200, `"mode":488`, ``},
		{"alice", "POST", "/api/v1/fs/mkdir", `{"path":"/p/q","mode":448,"parents":true}`, 201, `"mode":448`, ``},
		{"alice", "GET", "/api/v1/fs/stat?path=/p", ``, 200, `"mode":493`, ``},
		{"alice", "POST", "/api/v1/fs/mkdir", `{"path":"/e","mode":8192}`, 400, `outside`, ``},
		{"alice", "GET", "/api/v1/fs/stat?path=/e", ``, 404, ``, ``},
		{"alice", "POST", "/api/v1/fs/setattr", `{"path":"/f","mode":416}`, 200, `"mode":416`, ``},
	} {
		st, body := as(c.user, c.method, c.path, c.body)
		if st != c.want || !strings.Contains(body, c.msg) || c.not != "" && strings.Contains(body, c.not) {
			t.Errorf("%s %s %s %s: %d %s; want %d with %q", c.user, c.method, c.path, c.body, st, body, c.want, c.msg)
		}
	}
	// Bob's calls made nothing in his own tree either.
	bob := client.New(d.URL, "bob", "bob-pass")
	if _, err := bob.Stat(ctx, "/f"); client.StatusOf(err) != 404 {
		t.Fatalf("bob has a /f: %v", err)
	}
	// A new version (upload without a mode) keeps the stored bits.
	if _, err := alice.Upload(ctx, "/f", strings.NewReader("hello, again"), 12); err != nil {
		t.Fatal(err)
	}
	if n, err := alice.Stat(ctx, "/f"); err != nil || n.Mode != 0o640 || n.Size != 12 {
		t.Fatalf("after a new version: %+v %v", n, err)
	}
}
