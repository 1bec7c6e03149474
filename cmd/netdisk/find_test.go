package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/testutil"
)

// netdisk find against a real daemon: paths newest first, glob chosen by
// the pattern, --under, --limit, --json; and the names follow what WebDAV
// does to the tree (a folder's MOVE, a file's rename, a DELETE), since the
// index lives in the database under every surface.
func TestFind(t *testing.T) {
	d := testutil.StartDaemon(t)
	ctx := context.Background()
	dav := func(method, path string, hdr map[string]string, body string) {
		t.Helper()
		resp, err := d.Do(ctx, method, "/dav"+path, "admin", d.AdminPass, []byte(body), hdr)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
		}
	}
	dav("MKCOL", "/docs", nil, "")
	dav("MKCOL", "/docs/old", nil, "")
	for i, p := range []string{"/docs/a-report.txt", "/docs/b-REPORT.txt", "/docs/old/c-report.txt", "/photo.JPG", "/x*y.txt"} {
		// X-OC-Mtime sets each file's time: the order is the test's, not the clock's.
		dav(http.MethodPut, p, map[string]string{"X-OC-Mtime": strconv.Itoa(1_700_000_000 + i*60)}, "content "+p)
	}
	find := func(args ...string) []string {
		t.Helper()
		out := mustCLI(t, d, append([]string{"find"}, args...)...)
		return strings.Fields(out)
	}
	want := func(got []string, want ...string) {
		t.Helper()
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("find: %q, want %q", got, want)
		}
	}
	want(find("report"), "/docs/old/c-report.txt", "/docs/b-REPORT.txt", "/docs/a-report.txt")
	want(find("report", "--limit", "2"), "/docs/old/c-report.txt", "/docs/b-REPORT.txt")
	want(find("report", "--under", "/docs/old"), "/docs/old/c-report.txt")
	want(find("*.jpg"), "/photo.JPG")
	want(find("?-report.txt"), "/docs/old/c-report.txt", "/docs/b-REPORT.txt", "/docs/a-report.txt")
	want(find("x*y")) // a glob: the whole name
	want(find("x*y", "--glob=false"), "/x*y.txt")
	want(find("photo.jpg", "--glob"), "/photo.JPG")
	want(find("photo", "--glob"))
	want(find("old"), "/docs/old")

	var hits []apitype.Node
	for _, line := range strings.Split(strings.TrimSpace(mustCLI(t, d, "find", "photo", "--json")), "\n") {
		var n apitype.Node
		if err := json.Unmarshal([]byte(line), &n); err != nil {
			t.Fatalf("--json line %q: %v", line, err)
		}
		hits = append(hits, n)
	}
	if len(hits) != 1 || hits[0].Path != "/photo.JPG" || hits[0].Name != "photo.JPG" || hits[0].Size != int64(len("content /photo.JPG")) {
		t.Errorf("find --json: %+v", hits)
	}

	failCLI(t, d, nil, 1, "empty search pattern", "find", "")
	failCLI(t, d, nil, 1, "/nope", "find", "x", "--under", "/nope")

	dav("MOVE", "/docs", map[string]string{"Destination": "/dav/archive"}, "")
	want(find("report"), "/archive/old/c-report.txt", "/archive/b-REPORT.txt", "/archive/a-report.txt")
	want(find("docs"))
	dav("MOVE", "/archive/b-REPORT.txt", map[string]string{"Destination": "/dav/archive/summary.txt"}, "")
	dav(http.MethodDelete, "/archive/old", nil, "")
	want(find("report"), "/archive/a-report.txt")
	want(find("summary"), "/archive/summary.txt")

	// Another user sees none of it.
	c := client.New(d.URL, "admin", d.AdminPass)
	if _, err := c.AdminAddUser(ctx, apitype.NewUser{Name: "bob", Password: "bob-pw"}); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, d, map[string]string{"NETDISK_USER": "bob", "NETDISK_PASSWORD": "bob-pw"}, "find", "r"); r.code != 0 || r.stdout != "" {
		t.Errorf("bob's find r: exit %d, %q %q; want nothing", r.code, r.stdout, r.stderr)
	}
}

// Renames and deletions through a real FUSE mount reach the index too: the
// mount's changes are the server's tree changes.
func TestFindFollowsMount(t *testing.T) {
	fusermount := testutil.RequireTool(t, "fusermount3")
	d := testutil.StartDaemon(t)
	base := t.TempDir()
	mnt := filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_STATE_HOME": base, "TMPDIR": base}
	if r := runCLI(t, d, env, "mount", "--daemon", "--cache-dir", filepath.Join(base, "cache"), mnt); r.code != 0 {
		t.Fatalf("mount --daemon: exit %d, %s", r.code, r.stderr)
	}
	t.Cleanup(func() { exec.Command(fusermount, "-u", "-z", mnt).Run() })
	find := func(pattern string) string {
		t.Helper()
		return strings.Join(strings.Fields(mustCLI(t, d, "find", pattern)), " ")
	}
	if err := os.MkdirAll(filepath.Join(mnt, "trip", "day1"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"trip/day1/beach.jpg", "trip/day1/dunes.jpg"} {
		if err := os.WriteFile(filepath.Join(mnt, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := find("*.jpg"); got != "/trip/day1/dunes.jpg /trip/day1/beach.jpg" && got != "/trip/day1/beach.jpg /trip/day1/dunes.jpg" {
		t.Fatalf("after writing through the mount: %q", got)
	}
	if err := os.Rename(filepath.Join(mnt, "trip"), filepath.Join(mnt, "holiday")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(mnt, "holiday", "day1", "beach.jpg"), filepath.Join(mnt, "holiday", "day1", "sea.jpg")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(mnt, "holiday", "day1", "dunes.jpg")); err != nil {
		t.Fatal(err)
	}
	if got := find("*.jpg"); got != "/holiday/day1/sea.jpg" {
		t.Errorf("after a folder's and a file's rename and a removal through the mount: %q, want /holiday/day1/sea.jpg", got)
	}
	if got := find("trip"); got != "" {
		t.Errorf("the old folder name still found: %q", got)
	}
}
