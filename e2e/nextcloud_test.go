package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"netdisk/testutil"
)

// traffic reads the daemon's own counters (/metrics): the requests and
// body bytes in and out of every surface but the metrics themselves, what
// the clients' syncs cost.
func (e *env) traffic() (requests, bytes int64) {
	e.t.Helper()
	st, body, _ := e.call("GET", "/metrics", "admin", e.d.AdminPass, nil, nil)
	if st != http.StatusOK {
		e.t.Fatalf("GET /metrics: %d", st)
	}
	for _, line := range strings.Split(string(body), "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || strings.Contains(rest, `surface="metrics"`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(rest[strings.LastIndex(rest, " ")+1:], &v); err != nil {
			continue
		}
		switch name {
		case "netdisk_http_requests_total":
			requests += int64(v)
		case "netdisk_http_bytes_in_total", "netdisk_http_bytes_out_total":
			bytes += int64(v)
		}
	}
	return requests, bytes
}

// syncClient runs nextcloudcmd or owncloudcmd once over dir against url.
func syncClient(t *testing.T, tool, dir, url, user, pass string) {
	t.Helper()
	bin := testutil.RequireTool(t, tool)
	home := filepath.Join(filepath.Dir(dir), ".home-"+filepath.Base(dir))
	excl := filepath.Join(filepath.Dir(dir), ".exclude")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(excl, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctxFor(t), bin, "--non-interactive", "--exclude", excl, "--max-sync-retries", "1",
		"-u", user, "-p", pass, dir, url)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_DATA_HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, dir, err, lastBytes(out, 3000))
	}
}

func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// localTree reads every file below dir but the sync clients' own (their
// journal and log, dot files at the top).
func localTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	got := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if filepath.Dir(rel) == "." && strings.HasPrefix(rel, ".") && rel != "." {
			if de.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if de.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		got[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func writeTree(t *testing.T, dir string, tree map[string][]byte) {
	t.Helper()
	for name, b := range tree {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func sameTree(t *testing.T, what string, got, want map[string][]byte) {
	t.Helper()
	if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) {
		t.Fatalf("%s: files\n%q\nwant\n%q", what, g, w)
	}
	for n, b := range want {
		if !bytes.Equal(got[n], b) {
			t.Fatalf("%s: %s has %d bytes, want %d (contents differ)", what, n, len(got[n]), len(b))
		}
	}
}

// The real Nextcloud and ownCloud command-line clients sync a tree up to
// the drive and down to a second folder, carry edits and deletes both ways,
// keep both sides of a conflict, pull nothing again after a rename on the
// server, and spend a handful of requests on a sync with nothing to do.
func TestNextcloudClientsSync(t *testing.T) {
	for _, tool := range []string{"nextcloudcmd", "owncloudcmd"} {
		t.Run(tool, func(t *testing.T) { testClientSync(t, tool) })
	}
}

func testClientSync(t *testing.T, tool string) {
	testutil.RequireTool(t, tool)
	e := start(t)
	e.addUser("alice", "alice-pw")
	st, b, _ := e.call("POST", "/api/v1/account/tokens", "alice", "alice-pw", []byte(`{"name":"laptop"}`), map[string]string{"Content-Type": "application/json"})
	var tok struct{ Token string }
	if st != http.StatusCreated || json.Unmarshal(b, &tok) != nil || tok.Token == "" {
		t.Fatalf("make a token: %d %s", st, b)
	}

	root := t.TempDir()
	a, bdir := filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, d := range []string{a, bdir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tree := map[string][]byte{
		"empty.txt":          {},
		"top.txt":            []byte("top"),
		"photos/big.bin":     testutil.RandBytes(20 << 20), // above the clients' chunk size: chunked upload
		"deep/a/b/c/leaf.md": []byte("leaf"),
		"deep/a/shared.txt":  []byte("v1"),
		"Ελληνικά/файл.txt":  []byte("non-latin"),
	}
	for i := range 120 {
		tree[fmt.Sprintf("many/d%d/f%03d.bin", i%7, i)] = testutil.RandBytes(i * 517)
	}
	writeTree(t, a, tree)

	// First sync up with the password, then down with an app token.
	syncClient(t, tool, a, e.d.URL, "alice", "alice-pw")
	e.mustGet("alice", "alice-pw", "/dav/photos/big.bin", tree["photos/big.bin"])
	e.mustGet("alice", "alice-pw", "/remote.php/dav/files/alice/deep/a/b/c/leaf.md", tree["deep/a/b/c/leaf.md"])
	syncClient(t, tool, bdir, e.d.URL, "alice", tok.Token)
	sameTree(t, "b after the first sync down", localTree(t, bdir), tree)

	// Edits: deep on the server, and in b; a delete on each side.
	e.put("alice", "alice-pw", "/dav/deep/a/b/c/leaf.md", []byte("leaf, edited on the server"))
	tree["deep/a/b/c/leaf.md"] = []byte("leaf, edited on the server")
	if st := e.status("DELETE", "/dav/many/d1/f001.bin", "alice", "alice-pw", nil); st != http.StatusNoContent {
		t.Fatalf("DELETE on the server: %d", st)
	}
	delete(tree, "many/d1/f001.bin")
	tree["top.txt"] = []byte("top, edited in b")
	tree["new/in-b.txt"] = []byte("made in b")
	writeTree(t, bdir, map[string][]byte{"top.txt": tree["top.txt"], "new/in-b.txt": tree["new/in-b.txt"]})
	if err := os.Remove(filepath.Join(bdir, "many/d2/f002.bin")); err != nil {
		t.Fatal(err)
	}
	delete(tree, "many/d2/f002.bin")
	syncClient(t, tool, bdir, e.d.URL, "alice", tok.Token)
	syncClient(t, tool, a, e.d.URL, "alice", "alice-pw")
	sameTree(t, "a after the edits", localTree(t, a), tree)
	sameTree(t, "b after the edits", localTree(t, bdir), tree)

	// A conflict: the same file changed on the server and in a.
	e.put("alice", "alice-pw", "/dav/deep/a/shared.txt", []byte("v2 from the server"))
	writeTree(t, a, map[string][]byte{"deep/a/shared.txt": []byte("v2 from a, longer")})
	syncClient(t, tool, a, e.d.URL, "alice", "alice-pw")
	got := localTree(t, a)
	var conflict string
	for n := range got {
		if strings.HasPrefix(n, "deep/a/shared") && strings.Contains(strings.ToLower(n), "conflict") {
			conflict = n
		}
	}
	if conflict == "" || !bytes.Equal(got[conflict], []byte("v2 from a, longer")) || !bytes.Equal(got["deep/a/shared.txt"], []byte("v2 from the server")) {
		t.Fatalf("after a conflict a holds %q (conflict copy %q)", slices.Sorted(maps.Keys(got)), conflict)
	}
	delete(got, conflict)
	tree["deep/a/shared.txt"] = []byte("v2 from the server")
	sameTree(t, "a after the conflict", got, tree)

	// A rename of a folder on the server: the next sync moves, it does
	// not download again.
	syncClient(t, tool, a, e.d.URL, "alice", "alice-pw") // settle the conflict copy's upload
	if st := e.status("MOVE", "/dav/photos", "alice", "alice-pw", map[string]string{"Destination": "/dav/pictures"}); st != http.StatusCreated {
		t.Fatalf("MOVE on the server: %d", st)
	}
	_, before := e.traffic()
	syncClient(t, tool, a, e.d.URL, "alice", "alice-pw")
	_, after := e.traffic()
	got = localTree(t, a)
	if !bytes.Equal(got["pictures/big.bin"], tree["photos/big.bin"]) || got["photos/big.bin"] != nil {
		t.Fatalf("after the rename a holds %q", slices.Sorted(maps.Keys(got)))
	}
	if after-before > 1<<20 {
		t.Fatalf("the sync after a rename of 20 MiB moved %d bytes", after-before)
	}

	// Nothing changed: the root's ETag says so.
	syncClient(t, tool, a, e.d.URL, "alice", "alice-pw")
	r0, _ := e.traffic()
	syncClient(t, tool, a, e.d.URL, "alice", "alice-pw")
	if r1, _ := e.traffic(); r1-r0 > 8 {
		t.Fatalf("a sync with nothing to do made %d requests", r1-r0)
	}
}

// nextcloudcmd uploads a 300 MiB file in parts; the daemon is killed -9
// after some were acknowledged (listed in the upload folder, as the client
// sees them), and the next sync, after a restart, sends only the rest.
func TestNextcloudcmdResumesAfterCrash(t *testing.T) {
	testutil.RequireTool(t, "nextcloudcmd")
	e := start(t)
	e.addUser("alice", "alice-pw")
	dir := filepath.Join(t.TempDir(), "a")
	const size = 300 << 20
	data := testutil.RandBytes(size)
	writeTree(t, dir, map[string][]byte{"big.bin": data})

	// The first sync, slowed so the crash comes mid-upload: the daemon is
	// killed once a part is stored.
	home := filepath.Join(filepath.Dir(dir), ".home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctxFor(t), testutil.RequireTool(t, "nextcloudcmd"), "--non-interactive", "--max-sync-retries", "1",
		"--uplimit", "20000", "-u", "alice", "-p", "alice-pw", dir, e.d.URL)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_DATA_HOME="+home)
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var arrived int64
	waitFor(t, 90*time.Second, "a stored part", func() bool {
		arrived = e.arrivedParts("alice", "alice-pw")
		return arrived > 0
	})
	e.d.Kill()
	cmd.Wait() // fails: its server went away
	if arrived >= size {
		t.Fatalf("the whole file arrived before the crash (%d bytes)", arrived)
	}
	e.d.Restart()

	_, before := e.traffic()
	syncClient(t, "nextcloudcmd", dir, e.d.URL, "alice", "alice-pw")
	_, after := e.traffic()
	e.mustGet("alice", "alice-pw", "/dav/big.bin", data)
	t.Logf("%d of %d bytes acknowledged before the crash; the next sync moved %d", arrived, size, after-before)
	if sent := after - before; sent > size-arrived+(1<<20) {
		t.Fatalf("the sync after the crash moved %d bytes; %d of %d had arrived before it", sent, arrived, size)
	}
}

var contentLength = regexp.MustCompile(`<D:getcontentlength>([0-9]+)</D:getcontentlength>`)
var uploadFolder = regexp.MustCompile(`<D:href>([^<]*/remote.php/dav/uploads/[^/<]+/[^/<]+/)</D:href>`)

// arrivedParts sums the sizes of the parts listed in user's upload folders:
// what the server acknowledged of chunked uploads in progress.
func (e *env) arrivedParts(user, pass string) int64 {
	e.t.Helper()
	root := "/remote.php/dav/uploads/" + user + "/"
	st, b, _ := e.call("PROPFIND", root, user, pass, nil, map[string]string{"Depth": "1"})
	if st != http.StatusMultiStatus {
		e.t.Fatalf("PROPFIND %s: %d %s", root, st, b)
	}
	var n int64
	for _, m := range uploadFolder.FindAllSubmatch(b, -1) {
		st, b, _ := e.call("PROPFIND", string(m[1]), user, pass, nil, map[string]string{"Depth": "1"})
		if st != http.StatusMultiStatus {
			continue // assembled or gone meanwhile
		}
		for _, c := range contentLength.FindAllSubmatch(b, -1) {
			v, _ := strconv.ParseInt(string(c[1]), 10, 64)
			n += v
		}
	}
	return n
}
