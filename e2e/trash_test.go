package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
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

// A write that finds the chunk store full makes room from the history,
// oldest first, before it is refused: the trash never makes the drive
// refuse a write the live files leave room for.
func TestFullStoreExpungesOldestTrash(t *testing.T) {
	data := t.TempDir()
	smallDisk(t, filepath.Join(data, "chunks"), "16m")
	e := start(t, "--data", data, "--chunk-size", "1MiB", "--gc-interval", "0")
	e.addUser("ann", "ann-pw")
	var stored []string
	for i := 0; ; i++ {
		if i == 40 {
			t.Fatal("a 16 MiB store took 40 files of 1 MiB")
		}
		p := fmt.Sprintf("/dav/f%02d.bin", i)
		st, body, _ := e.call("PUT", p, "ann", "ann-pw", testutil.RandBytes(1<<20), nil)
		if st == http.StatusInsufficientStorage {
			break
		}
		if st != http.StatusCreated {
			t.Fatalf("PUT %s: %d %s", p, st, body)
		}
		stored = append(stored, p)
	}
	for _, p := range stored {
		if st := e.status("DELETE", p, "ann", "ann-pw", nil); st != http.StatusNoContent {
			t.Fatalf("DELETE %s: %d", p, st)
		}
	}
	b := testutil.RandBytes(3 << 20)
	e.put("ann", "ann-pw", "/dav/new.bin", b)
	e.mustGet("ann", "ann-pw", "/dav/new.bin", b)
	var list struct{ Items []struct{ Path string } }
	st, body, _ := e.call("GET", "/api/v1/trash?limit=1000", "ann", "ann-pw", nil, nil)
	if st != http.StatusOK || json.Unmarshal(body, &list) != nil {
		t.Fatalf("trash: %d %s", st, body)
	}
	n := len(list.Items)
	if n == 0 || n > len(stored)-3 || list.Items[n-1].Path == "/f00.bin" || list.Items[0].Path != strings.TrimPrefix(stored[len(stored)-1], "/dav") {
		t.Fatalf("trash after a write on a full store: %+v (of %d deleted)", list.Items, len(stored))
	}
}

// TestMountRmRfThenTrashRestore: rm -rf in the mount deletes a tree leaf
// first, one entry at a time; the trash still holds it as one item, and
// `netdisk trash restore` of the folder brings every file back.
func TestMountRmRfThenTrashRestore(t *testing.T) {
	testutil.RequireTool(t, "fusermount3")
	e := start(t)
	e.put("admin", e.d.AdminPass, "/dav/probe", []byte("p"))
	mnt := e.mountDrive("probe")
	tree := map[string][]byte{
		"tree/a.txt":        []byte("a"),
		"tree/sub/b.bin":    testutil.RandBytes(300000),
		"tree/sub/deep/c":   testutil.RandBytes(70000),
		"tree/sub/deep/d":   {},
		"tree/other/e.data": testutil.RandBytes(1000),
	}
	for name, b := range tree {
		p := filepath.Join(mnt, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("rm", "-rf", filepath.Join(mnt, "tree")).CombinedOutput(); err != nil {
		t.Fatalf("rm -rf: %v %s", err, out)
	}
	var items []struct {
		Path  string
		IsDir bool
	}
	if err := json.Unmarshal([]byte(e.trashCLI(t, "admin", e.d.AdminPass, "ls", "--json")), &items); err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].Path != "/tree" || !items[0].IsDir {
		t.Fatalf("trash after rm -rf in the mount: %+v", items)
	}
	e.trashCLI(t, "admin", e.d.AdminPass, "restore", "/tree")
	for name, want := range tree {
		e.mustGet("admin", e.d.AdminPass, "/dav/"+name, want)
	}
}
