package e2e

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"netdisk/testutil"
)

// rclone's WebDAV backend, a real client with its own PROPFIND parsing and
// upload habits, copies a tree of awkward files in and out byte for byte.
func TestRcloneRoundTrip(t *testing.T) {
	testutil.RequireTool(t, "rclone")
	e := start(t)
	e.addUser("alice", "alice-pw")

	src := t.TempDir()
	tree := map[string][]byte{
		"empty.txt":                       {},
		"one.bin":                         testutil.RandBytes(1),
		"exactly-4MiB.bin":                testutil.RandBytes(4 << 20),
		"4MiB-plus-1.bin":                 testutil.RandBytes(4<<20 + 1),
		"ten.bin":                         testutil.RandBytes(10<<20 + 12345),
		"nested/a/b/c/deep.txt":           []byte("deep"),
		"nested/a/sibling.bin":            testutil.RandBytes(70000),
		"nested/Ελληνικά/файл.txt":        []byte("non-latin directories"),
		"nested/a/b/same-as-one.bin":      nil, // filled below: duplicate content
		"nested/a/b/exactly-4MiB-dup.bin": nil,
	}
	for _, name := range testutil.OddNames(t) {
		tree["odd/"+name] = []byte(name)
	}
	tree["nested/a/b/same-as-one.bin"] = tree["one.bin"]
	tree["nested/a/b/exactly-4MiB-dup.bin"] = tree["exactly-4MiB.bin"]
	for name, b := range tree {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	run := e.rclone(t, "other", "alice", "alice-pw")
	run("copy", src, "nd:in")
	back := t.TempDir()
	run("copy", "nd:in", back)
	// rclone's own check, then ours.
	run("check", src, "nd:in")

	got := map[string][]byte{}
	filepath.WalkDir(back, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(back, p)
		b, err := os.ReadFile(p)
		got[filepath.ToSlash(rel)] = b
		return err
	})
	names, gotNames := slices.Sorted(maps.Keys(tree)), slices.Sorted(maps.Keys(got))
	if !slices.Equal(names, gotNames) {
		t.Fatalf("tree after the round trip:\n%q\nwant\n%q", gotNames, names)
	}
	for n, b := range tree {
		if !bytes.Equal(got[n], b) {
			t.Errorf("%s: %d bytes back, %d sent, contents differ", n, len(got[n]), len(b))
		}
	}
	// The server's view matches too (sizes via WebDAV, not rclone).
	e.mustGet("alice", "alice-pw", "/dav/in/ten.bin", tree["ten.bin"])
}

// rclone returns a runner of rclone against the daemon's WebDAV as user,
// with the given vendor setting, as the remote "nd:" (configured through the
// environment, the password obscured as rclone wants it). The runner returns
// rclone's standard output and fails the test with its messages and the
// daemon's last log lines.
func (e *env) rclone(t *testing.T, vendor, user, pass string) func(args ...string) string {
	t.Helper()
	rclone := testutil.RequireTool(t, "rclone")
	obscured, err := exec.Command(rclone, "obscure", pass).Output()
	if err != nil {
		t.Fatalf("rclone obscure: %v", err)
	}
	cfg := filepath.Join(t.TempDir(), "rclone.conf")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"RCLONE_CONFIG="+cfg,
		"RCLONE_CONFIG_ND_TYPE=webdav",
		"RCLONE_CONFIG_ND_URL="+e.d.URL+"/dav/",
		"RCLONE_CONFIG_ND_VENDOR="+vendor,
		"RCLONE_CONFIG_ND_USER="+user,
		"RCLONE_CONFIG_ND_PASS="+strings.TrimSpace(string(obscured)),
	)
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(rclone, append(args, "--retries", "1", "--low-level-retries", "1")...)
		cmd.Env = env
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("rclone %s: %v\n%s%s\n--- daemon log tail:\n%s", strings.Join(args, " "), err, out.String(), stderr.String(), tail(e.d.Logs(), 3000))
		}
		return out.String()
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
