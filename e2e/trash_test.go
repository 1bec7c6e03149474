package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"netdisk/testutil"
)

// trashCLI runs the built `netdisk trash …` as user.
func (e *env) trashCLI(t *testing.T, user, pass string, args ...string) string {
	t.Helper()
	cmd := exec.Command(testutil.Binary(t), append([]string{"trash"}, args...)...)
	cmd.Env = append(os.Environ(), "NETDISK_SERVER="+e.d.URL, "NETDISK_USER="+user, "NETDISK_PASSWORD="+pass)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("netdisk trash %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), stderr.String())
	}
	return out.String()
}

// What rclone deletes over WebDAV waits in the trash; `netdisk trash
// restore` gives back the very bytes, a file by its path and a purged
// folder as a whole, and GC collects nothing of it meanwhile.
func TestRcloneDeleteThenTrashRestore(t *testing.T) {
	testutil.RequireTool(t, "rclone")
	e := start(t)
	e.addUser("alice", "alice-pw")
	src := t.TempDir()
	tree := map[string][]byte{
		"big.bin":         testutil.RandBytes(9<<20 + 7),
		"dir/a.txt":       []byte("a"),
		"dir/sub/b.bin":   testutil.RandBytes(300000),
		"dir/sub/empty":   {},
		"keep/other.data": testutil.RandBytes(1000),
	}
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
	run("delete", "nd:in/big.bin")
	run("purge", "nd:in/dir")
	if st := e.status("GET", "/dav/in/big.bin", "alice", "alice-pw", nil); st != 404 {
		t.Fatalf("GET of the deleted file: %d", st)
	}
	var gc struct{ Chunks int64 }
	e.admin("POST", "/api/v1/admin/gc", &gc)
	if gc.Chunks != 0 {
		t.Fatalf("GC collected %d chunks of files in the trash", gc.Chunks)
	}

	var items []struct {
		ID    int64
		Path  string
		IsDir bool
	}
	if err := json.Unmarshal([]byte(e.trashCLI(t, "alice", "alice-pw", "ls", "--json")), &items); err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].Path != "/in/dir" || !items[0].IsDir || items[1].Path != "/in/big.bin" {
		t.Fatalf("trash ls: %+v", items)
	}
	if out := e.trashCLI(t, "alice", "alice-pw", "restore", "/in/big.bin"); !strings.Contains(out, "restored /in/big.bin") {
		t.Fatalf("restore said %q", out)
	}
	e.trashCLI(t, "alice", "alice-pw", "restore", "/in/dir")
	back := t.TempDir()
	run("copy", "nd:in", back)
	run("check", src, "nd:in")
	for name, want := range tree {
		got, err := os.ReadFile(filepath.Join(back, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s after the restore: %d bytes, %v", name, len(got), err)
		}
	}
	if out := e.trashCLI(t, "alice", "alice-pw", "ls"); strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("trash after the restores: %q", out)
	}
}
