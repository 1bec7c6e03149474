package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/testutil"
)

// davDo sends one WebDAV request as user:pass and returns the status and body.
func davDo(t *testing.T, hc *http.Client, d *testutil.Daemon, user, pass, method, path string, body string, hdr map[string]string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, d.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(user, pass)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Shares between users end to end, on both metadata stores: alice shares
// with the built binary; bob reads through WebDAV and the API, is refused
// every write while the share is read-only (403) and writes into alice's
// quota once it is writable; nothing outside the shared folder is reached
// by "..", encoded or not, nor by a Destination; a group member removed
// loses access at the next request on the same open connection; leaving
// and revoking end it.
func TestShareUsersE2E(t *testing.T) {
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			var flags []string
			if store == "postgres" {
				flags = []string{"--meta", testutil.SharedPostgres(t).NewDatabase(t), "--redis", testutil.StartRedis(t).URL}
			}
			shareUsersE2E(t, testutil.StartDaemon(t, flags...))
		})
	}
}

func shareUsersE2E(t *testing.T, d *testutil.Daemon) {
	ctx := context.Background()
	for _, u := range []string{"alice", "bob", "carol"} {
		mustCLI(t, d, "admin", "user", "add", u, "--password", u+"-pass", "--quota", "1MiB")
	}
	alice := client.New(d.URL, "alice", "alice-pass")
	bob := client.New(d.URL, "bob", "bob-pass")
	as := map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": "alice-pass"}
	bs := map[string]string{"NETDISK_USER": "bob", "NETDISK_PASSWORD": "bob-pass"}
	up := func(c *client.Client, p, body string) {
		t.Helper()
		if _, err := c.Upload(ctx, p, strings.NewReader(body), int64(len(body))); err != nil {
			t.Fatal(err)
		}
	}
	up(alice, "/docs/a.txt", "alpha")
	up(alice, "/docs/sub/b.txt", "beta")
	up(alice, "/secret.txt", "alice only")
	up(bob, "/own.txt", "bob's")

	r := runCLI(t, d, as, "share", "user", "/docs", "bob")
	if r.code != 0 || !strings.Contains(r.stdout, "/docs shared with user bob, read-only") {
		t.Fatalf("share user: %d %q %q", r.code, r.stdout, r.stderr)
	}
	hc := &http.Client{}
	dav := func(method, path, body string, hdr map[string]string) (int, string) {
		t.Helper()
		return davDo(t, hc, d, "bob", "bob-pass", method, path, body, hdr)
	}
	if code, body := dav("PROPFIND", "/dav/", "", map[string]string{"Depth": "1"}); code != 207 || !strings.Contains(body, "/dav/docs/") || strings.Contains(body, "secret") {
		t.Fatalf("bob's PROPFIND /: %d %s", code, body)
	}
	if code, body := dav("GET", "/dav/docs/sub/b.txt", "", nil); code != 200 || body != "beta" {
		t.Fatalf("bob's GET through the share: %d %q", code, body)
	}
	if ls, err := bob.List(ctx, "/docs"); err != nil || len(ls) != 2 {
		t.Fatalf("bob's API listing of the share: %+v %v", ls, err)
	}
	// Read-only: every write refused with 403, alice's files unchanged.
	for _, w := range []struct{ method, path, body, dest string }{
		{"PUT", "/dav/docs/new.txt", "x", ""},
		{"PUT", "/dav/docs/a.txt", "overwrite", ""},
		{"DELETE", "/dav/docs/a.txt", "", ""},
		{"MKCOL", "/dav/docs/dir", "", ""},
		{"MOVE", "/dav/docs/a.txt", "", "/dav/docs/c.txt"},
		{"MOVE", "/dav/docs/a.txt", "", "/dav/a.txt"},
		{"COPY", "/dav/own.txt", "", "/dav/docs/own.txt"},
		{"PROPPATCH", "/dav/docs/a.txt", `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><x xmlns="urn:x">v</x></D:prop></D:set></D:propertyupdate>`, ""},
	} {
		hdr := map[string]string{}
		if w.dest != "" {
			hdr["Destination"] = d.URL + w.dest
		}
		code, body := dav(w.method, w.path, w.body, hdr)
		if w.method == "PROPPATCH" && code == http.StatusMultiStatus && strings.Contains(body, "403") {
			continue // refused per property (RFC 4918 §9.2)
		}
		if code != http.StatusForbidden {
			t.Fatalf("bob's %s %s through a read-only share: %d %s", w.method, w.path, code, body)
		}
	}
	if _, err := bob.Upload(ctx, "/docs/api.txt", strings.NewReader("x"), 1); client.StatusOf(err) != http.StatusForbidden {
		t.Fatalf("bob's API upload into a read-only share: %v", err)
	}
	// Nothing outside the shared folder, however the path is spelled.
	for _, p := range []string{"/dav/docs/../secret.txt", "/dav/docs/%2e%2e/secret.txt", "/dav/docs/..%2fsecret.txt", "/dav/docs/sub/%2E%2E/%2E%2E/secret.txt", "/dav/secret.txt"} {
		if code, body := dav("GET", p, "", nil); code == 200 || strings.Contains(body, "alice only") {
			t.Fatalf("bob's GET %s: %d %q", p, code, body)
		}
	}
	// A copy out takes alice's content into bob's tree (his quota).
	if code, _ := dav("COPY", "/dav/docs/sub", "", map[string]string{"Destination": d.URL + "/dav/mine"}); code != 201 {
		t.Fatalf("bob's COPY out of the share: %d", code)
	}
	if code, body := dav("GET", "/dav/mine/b.txt", "", nil); code != 200 || body != "beta" {
		t.Fatalf("the copy: %d %q", code, body)
	}

	// Writable: bob's PUT lands in alice's tree and quota.
	r = runCLI(t, d, as, "share", "user", "/docs", "bob", "--write")
	if r.code != 0 || !strings.Contains(r.stdout, "read-write") {
		t.Fatalf("share user --write: %d %q %q", r.code, r.stdout, r.stderr)
	}
	before := listUsers(t, d)
	if code, _ := dav("PUT", "/dav/docs/new.txt", "from bob", nil); code != 201 {
		t.Fatalf("bob's PUT into a writable share: %d", code)
	}
	if _, err := bob.Upload(ctx, "/docs/api.txt", strings.NewReader("api"), 3); err != nil {
		t.Fatalf("bob's API upload into a writable share: %v", err)
	}
	after := listUsers(t, d)
	if after["alice"].Finished-before["alice"].Finished < int64(len("from bob")+len("api")) || after["bob"].Finished != before["bob"].Finished {
		t.Fatalf("usage: alice %d → %d, bob %d → %d", before["alice"].Finished, after["alice"].Finished, before["bob"].Finished, after["bob"].Finished)
	}
	if n, err := alice.Stat(ctx, "/docs/new.txt"); err != nil || n.Size != int64(len("from bob")) {
		t.Fatalf("alice's view of bob's write: %+v %v", n, err)
	}
	// Alice's WebDAV lock binds bob's writes: the lock table is keyed on
	// the owner's resource, whoever writes through which path.
	lockBody := `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>`
	if code, body := davDo(t, hc, d, "alice", "alice-pass", "LOCK", "/dav/docs/new.txt", lockBody, map[string]string{"Timeout": "Second-600"}); code != 200 {
		t.Fatalf("alice's LOCK: %d %s", code, body)
	}
	if code, _ := dav("PUT", "/dav/docs/new.txt", "bob again", nil); code != http.StatusLocked {
		t.Fatalf("bob's PUT on a file alice locked: %d, want 423", code)
	}
	if code, _ := dav("DELETE", "/dav/docs/new.txt", "", nil); code != http.StatusLocked {
		t.Fatalf("bob's DELETE of a file alice locked: %d, want 423", code)
	}
	// Alice's quota bounds what bob writes there.
	if code, _ := dav("PUT", "/dav/docs/big.bin", strings.Repeat("x", 1100<<10), nil); code != http.StatusInsufficientStorage {
		t.Fatalf("bob's PUT past alice's quota: %d", code)
	}
	// A move out of the share deletes alice's file: her lock binds it.
	if code, _ := dav("MOVE", "/dav/docs/new.txt", "", map[string]string{"Destination": d.URL + "/dav/new.txt"}); code != http.StatusLocked {
		t.Fatalf("bob's MOVE of a file alice locked out of a share: %d, want 423", code)
	}
	// One she did not lock moves into bob's tree (the API's move, as
	// WebDAV's, goes through the drive), and back into hers.
	if _, err := bob.Move(ctx, "/docs/api.txt", "/api.txt", false); err != nil {
		t.Fatalf("bob's API move out of a share: %v", err)
	}
	if _, err := alice.Stat(ctx, "/docs/api.txt"); client.StatusOf(err) != http.StatusNotFound {
		t.Fatalf("alice's api.txt after bob moved it out: %v", err)
	}
	if code, _ := dav("MOVE", "/dav/api.txt", "", map[string]string{"Destination": d.URL + "/dav/docs/api.txt"}); code != 201 {
		t.Fatalf("bob's MOVE into a share: %d, want 201", code)
	}
	if n, err := alice.Stat(ctx, "/docs/api.txt"); err != nil || n.Size != 3 {
		t.Fatalf("alice's api.txt after bob moved it back: %+v %v", n, err)
	}

	var l apitype.UserShareList
	if err := json.Unmarshal([]byte(mustCLIEnv(t, d, as, "share", "users", "--json")), &l); err != nil || len(l.Shares) != 1 || l.Shares[0].To != "bob" || !l.Shares[0].Write {
		t.Fatalf("alice's share users: %+v %v", l, err)
	}
	if err := json.Unmarshal([]byte(mustCLIEnv(t, d, bs, "share", "users", "--json")), &l); err != nil || len(l.SharedWithMe) != 1 || l.SharedWithMe[0].Owner != "alice" || l.SharedWithMe[0].Path != "/docs" {
		t.Fatalf("bob's share users: %+v %v", l, err)
	}
	// Bob leaves: his view loses it, alice keeps her folder.
	mustCLIEnv(t, d, bs, "share", "leave", "/docs")
	if code, _ := dav("GET", "/dav/docs/a.txt", "", nil); code != 404 {
		t.Fatalf("bob's GET after leaving: %d", code)
	}
	if _, err := alice.Stat(ctx, "/docs/a.txt"); err != nil {
		t.Fatal(err)
	}

	// Groups: carol reads through the group; removed, her next request on
	// the same open connection is refused.
	mustCLI(t, d, "admin", "group", "add", "team")
	mustCLI(t, d, "admin", "group", "member", "add", "team", "carol")
	if out := mustCLI(t, d, "admin", "group", "ls"); !strings.Contains(out, "team") || !strings.Contains(out, "carol") {
		t.Fatalf("admin group ls: %q", out)
	}
	mustCLIEnv(t, d, as, "share", "group", "/docs/sub", "team")
	one := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	reused := false
	carolGet := func() int {
		req, _ := http.NewRequest("GET", d.URL+"/dav/sub/b.txt", nil)
		req.SetBasicAuth("carol", "carol-pass")
		req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}))
		resp, err := one.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := carolGet(); code != 200 {
		t.Fatalf("carol's GET through the group: %d", code)
	}
	mustCLI(t, d, "admin", "group", "member", "rm", "team", "carol")
	if code := carolGet(); code != 404 || !reused {
		t.Fatalf("carol's GET after her removal: %d (connection reused: %v)", code, reused)
	}

	// Revoked: gone for bob at once.
	mustCLIEnv(t, d, as, "share", "user", "/docs", "bob")
	if err := json.Unmarshal([]byte(mustCLIEnv(t, d, as, "share", "users", "--json")), &l); err != nil {
		t.Fatal(err)
	}
	for _, s := range l.Shares {
		if s.To == "bob" {
			mustCLIEnv(t, d, as, "share", "unshare", itoa(s.ID))
		}
	}
	if code, _ := dav("GET", "/dav/docs/a.txt", "", nil); code != 404 {
		t.Fatalf("bob's GET after the revoke: %d", code)
	}
}

func mustCLIEnv(t *testing.T, d *testutil.Daemon, env map[string]string, args ...string) string {
	t.Helper()
	r := runCLI(t, d, env, args...)
	if r.code != 0 {
		t.Fatalf("netdisk %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// The lock service's "path:" resource names the owner's node through a
// share: alice and bob, each by their own path, contend for one lock, and
// each is answered with their own name of it.
func TestSharePathLocks(t *testing.T) {
	d := testutil.StartDaemon(t)
	ctx := context.Background()
	for _, u := range []string{"alice", "bob"} {
		mustCLI(t, d, "admin", "user", "add", u, "--password", u+"-pass")
	}
	alice := client.New(d.URL, "alice", "alice-pass")
	bob := client.New(d.URL, "bob", "bob-pass")
	if _, err := alice.Upload(ctx, "/work/docs/f.bin", strings.NewReader("data"), 4); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.ShareWith(ctx, apitype.NewUserShare{Path: "/work/docs", User: "bob"}); err != nil {
		t.Fatal(err)
	}
	a, err := alice.TryLock(ctx, "pull", "path:/work/docs/f.bin", "alice-laptop", "")
	if err != nil || a.Status != "acquired" {
		t.Fatalf("alice's lock: %+v %v", a, err)
	}
	b, err := bob.TryLock(ctx, "pull", "path:/docs/f.bin", "bob-laptop", "")
	if err != nil {
		t.Fatal(err)
	}
	if b.Status == "acquired" || b.Resource != "path:/docs/f.bin" {
		t.Fatalf("bob's lock on the same file through the share: %+v (granted beside alice's)", b)
	}
	// Bob's own file of the same name is another resource.
	if _, err := bob.Upload(ctx, "/f.bin", strings.NewReader("mine"), 4); err != nil {
		t.Fatal(err)
	}
	if b, err := bob.TryLock(ctx, "pull", "path:/f.bin", "bob-laptop", ""); err != nil || b.Status != "acquired" {
		t.Fatalf("bob's lock on his own file: %+v %v", b, err)
	}
}

// TestShareContentLocks: the pull lock on content (content:<file hash>,
// what `netdisk pull --shared-cache` takes) is one lock for the owner and a
// recipient pulling the same shared file, each naming it by their own path:
// one transfer between them. A user with no file of that content is refused
// as for any content they cannot read.
func TestShareContentLocks(t *testing.T) {
	d := testutil.StartDaemon(t)
	ctx := context.Background()
	for _, u := range []string{"alice", "bob", "carol"} {
		mustCLI(t, d, "admin", "user", "add", u, "--password", u+"-pass")
	}
	alice := client.New(d.URL, "alice", "alice-pass")
	bob := client.New(d.URL, "bob", "bob-pass")
	carol := client.New(d.URL, "carol", "carol-pass")
	res, err := alice.Upload(ctx, "/work/docs/f.bin", strings.NewReader("shared data"), 11)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.ShareWith(ctx, apitype.NewUserShare{Path: "/work/docs", User: "bob"}); err != nil {
		t.Fatal(err)
	}
	content := "content:" + res.FileHash
	a, err := alice.TryLock(ctx, "pull", content, "alice-laptop", "/work/docs/f.bin")
	if err != nil || a.Status != "acquired" {
		t.Fatalf("alice's pull lock: %+v %v", a, err)
	}
	b, err := bob.TryLock(ctx, "pull", content, "bob-laptop", "/docs/f.bin")
	if err != nil {
		t.Fatal(err)
	}
	if b.Status == "acquired" {
		t.Fatalf("bob's pull lock on the shared file's content: %+v (granted beside alice's: two transfers)", b)
	}
	if c, err := carol.TryLock(ctx, "pull", content, "carol-laptop", "/docs/f.bin"); err == nil {
		t.Fatalf("carol, without the share, locking its content: %+v", c)
	}
}
