package e2e

import (
	"bytes"
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
