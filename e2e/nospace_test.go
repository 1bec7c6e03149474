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

// smallDisk mounts a tmpfs of size at dir (we run as root in CI; without
// the privilege the test skips locally and fails under CI=true). It is
// unmounted at cleanup, after the daemon registered later has stopped.
func smallDisk(t *testing.T, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		if testutil.InCI() {
			t.Fatalf("mount tmpfs (root required under CI): %v: %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// A full chunk store answers 507 with code "no_space" on every surface that
// stores bytes, names no server path, leaves nothing half-written, and the
// space of a deleted file is reusable by the very next write: no scheduled
// GC runs here (--gc-interval 0).
func TestDiskFull(t *testing.T) {
	data := t.TempDir()
	smallDisk(t, filepath.Join(data, "chunks"), "64m")
	e := start(t, "--data", data, "--chunk-size", "1MiB", "--gc-interval", "0")
	e.addUser("ann", "ann-pw")
	const fileSize = 8 << 20
	leaks := func(what string, body []byte) {
		t.Helper()
		for _, s := range []string{data, "/chunks", "tmp/", "put-", "spare-", "no space left on device"} {
			if bytes.Contains(body, []byte(s)) {
				t.Fatalf("%s: the error body shows %q: %s", what, s, body)
			}
		}
	}
	wantNoSpace := func(what string, st int, body []byte, isJSON bool) {
		t.Helper()
		if st != http.StatusInsufficientStorage {
			t.Fatalf("%s: %d %s, want 507", what, st, body)
		}
		leaks(what, body)
		if isJSON {
			var eb struct{ Error, Code string }
			if err := json.Unmarshal(body, &eb); err != nil || eb.Code != "no_space" {
				t.Fatalf("%s: body %s, want code no_space", what, body)
			}
		}
	}

	// Fill the disk through WebDAV until a PUT is refused.
	var stored []string
	var full string
	for i := 0; i < 20 && full == ""; i++ {
		p := fmt.Sprintf("/dav/f%d.bin", i)
		st, body, _ := e.call("PUT", p, "ann", "ann-pw", testutil.RandBytes(fileSize), nil)
		switch st {
		case http.StatusCreated:
			stored = append(stored, p)
		default:
			wantNoSpace("PUT on a full disk", st, body, false)
			full = p
		}
	}
	if full == "" || len(stored) == 0 {
		t.Fatalf("a 64 MiB disk took %d files of 8 MiB without refusing one", len(stored))
	}
	if st := e.status("GET", full, "ann", "ann-pw", nil); st != http.StatusNotFound {
		t.Fatalf("GET of the refused PUT: %d, want 404 (nothing half-written)", st)
	}

	// The other surfaces that store bytes, while the disk is full.
	big := testutil.RandBytes(fileSize)
	st, body, _ := e.call("PUT", "/api/v1/file/upload?path=/one.bin", "ann", "ann-pw", big, nil)
	wantNoSpace("one-request upload", st, body, true)
	if st := e.status("GET", "/dav/one.bin", "ann", "ann-pw", nil); st != http.StatusNotFound {
		t.Fatalf("GET of the refused one-request upload: %d, want 404", st)
	}
	initBody, _ := json.Marshal(map[string]any{"path": "/chunked.bin", "size": 1 << 20})
	var in struct{ UploadID string }
	st, body, _ = e.call("POST", "/api/v1/file/init", "ann", "ann-pw", initBody, nil)
	if st != http.StatusOK || json.Unmarshal(body, &in) != nil {
		t.Fatalf("init: %d %s", st, body)
	}
	// Fill what the refused writes' orphans left free, so the chunk cannot fit.
	for i := 0; ; i++ {
		st, _, _ := e.call("PUT", fmt.Sprintf("/dav/pad%d.bin", i), "ann", "ann-pw", testutil.RandBytes(1<<20), nil)
		if st != http.StatusCreated {
			break
		}
		stored = append(stored, fmt.Sprintf("/dav/pad%d.bin", i))
	}
	chunk := testutil.RandBytes(1 << 20)
	url := fmt.Sprintf("/api/v1/file/uploadChunk?uploadId=%s&index=0&hash=%s", in.UploadID, testutil.MD5Hex(chunk))
	st, body, _ = e.call("PUT", url, "ann", "ann-pw", chunk, nil)
	wantNoSpace("uploadChunk", st, body, true)

	// Delete two files: the next writes (8 MiB, then 1 MiB) fit at once.
	for _, p := range stored[:2] {
		if st := e.status("DELETE", p, "ann", "ann-pw", nil); st != http.StatusNoContent {
			t.Fatalf("DELETE: %d", st)
		}
	}
	again := testutil.RandBytes(fileSize)
	e.put("ann", "ann-pw", full, again)
	e.mustGet("ann", "ann-pw", full, again)
	if st, body, _ := e.call("PUT", url, "ann", "ann-pw", chunk, nil); st != http.StatusOK {
		t.Fatalf("uploadChunk after the delete: %d %s", st, body)
	}
	if logs := e.d.Logs(); !strings.Contains(logs, "chunk store full") {
		t.Fatalf("the daemon did not log the full store:\n%s", logs)
	}
}

// A disk the drive itself filled recovers: the data directory (database and
// chunks) is one small file system, filled through WebDAV until writes are
// refused. Deleting, `admin gc` and then new writes work, before and after
// restarts, because a reserve kept beside the database gives deletions their
// room and writes stop before it is touched. A disk filled to the last byte
// by someone else is then also handled: a deletion that finds no space
// releases the reserve and runs.
func TestDiskFullRecovers(t *testing.T) {
	data := t.TempDir()
	smallDisk(t, data, "48m")
	const reserve = 8 << 20
	e := start(t, "--data", data, "--chunk-size", "1MiB", "--gc-interval", "0", "--disk-reserve", "8MiB")
	e.addUser("ann", "ann-pw")
	if fi, err := os.Stat(filepath.Join(data, "reserve")); err != nil || fi.Size() != reserve {
		t.Fatalf("reserve file: %v %v, want %d bytes", fi, err, reserve)
	}
	small := []byte("hello\n")
	wantFull := func(what string) {
		t.Helper()
		st, body, _ := e.call("PUT", "/api/v1/file/upload?path=/small.txt", "ann", "ann-pw", small, nil)
		var eb struct{ Error, Code string }
		if st != http.StatusInsufficientStorage || json.Unmarshal(body, &eb) != nil || eb.Code != "no_space" {
			t.Fatalf("%s: 6-byte upload: %d %s, want 507 no_space", what, st, body)
		}
		if strings.Contains(eb.Error, data) || strings.Contains(eb.Error, "\n") {
			t.Fatalf("%s: message %q, want one line naming no path", what, eb.Error)
		}
		if st := e.status("MKCOL", "/dav/newdir", "ann", "ann-pw", nil); st != http.StatusInsufficientStorage {
			t.Fatalf("%s: MKCOL: %d, want 507", what, st)
		}
	}

	var stored []string
	for i := 0; ; i++ {
		if i == 100 {
			t.Fatal("a 48 MiB disk took 100 files of 1 MiB")
		}
		p := fmt.Sprintf("/dav/f%d.bin", i)
		st, body, _ := e.call("PUT", p, "ann", "ann-pw", testutil.RandBytes(1<<20), nil)
		if st == http.StatusInsufficientStorage {
			break
		}
		if st != http.StatusCreated {
			t.Fatalf("PUT %s: %d %s", p, st, body)
		}
		stored = append(stored, p)
	}
	if len(stored) < 10 {
		t.Fatalf("only %d files of 1 MiB fit on a 48 MiB disk", len(stored))
	}
	wantFull("full")

	// A restart on the full disk starts, and still refuses writes.
	e.d.Restart()
	wantFull("after a restart")

	// Deleting, emptying the trash and collecting work on the full disk,
	// and give writes back. Deleted files hold their chunks until their
	// trash items are expunged.
	for _, p := range stored[:8] {
		if st, body, _ := e.call("DELETE", p, "ann", "ann-pw", nil, nil); st != http.StatusNoContent {
			t.Fatalf("DELETE %s on a full disk: %d %s", p, st, body)
		}
	}
	stored = stored[8:]
	var gc struct{ Chunks int64 }
	e.admin("POST", "/api/v1/admin/gc", &gc)
	if gc.Chunks != 0 {
		t.Fatalf("gc removed %d chunks of files in the trash", gc.Chunks)
	}
	if st, body, _ := e.call("DELETE", "/api/v1/trash", "ann", "ann-pw", nil, nil); st != http.StatusOK || !strings.Contains(string(body), `"deleted":8`) {
		t.Fatalf("emptying the trash on a full disk: %d %s", st, body)
	}
	e.admin("POST", "/api/v1/admin/gc", &gc)
	if gc.Chunks != 8 {
		t.Fatalf("gc removed %d chunks, want 8", gc.Chunks)
	}
	st, body, _ := e.call("PUT", "/api/v1/file/upload?path=/small.txt", "ann", "ann-pw", small, nil)
	if st != http.StatusOK {
		t.Fatalf("6-byte upload after deleting 8 MiB: %d %s", st, body)
	}
	e.mustGet("ann", "ann-pw", "/dav/small.txt", small)
	if fi, err := os.Stat(filepath.Join(data, "reserve")); err != nil || fi.Size() != reserve {
		t.Fatalf("the reserve was not allocated again: %v %v", fi, err)
	}

	// And across a restart.
	e.d.Restart()
	again := testutil.RandBytes(1 << 20)
	e.put("ann", "ann-pw", "/dav/again.bin", again)
	e.mustGet("ann", "ann-pw", "/dav/again.bin", again)

	// Someone else fills the disk to the last byte, the reserve still in
	// place: a deletion still runs, and writes are refused meanwhile.
	filler := filepath.Join(data, "filler")
	fillUp(t, filler)
	wantFull("filled by another program")
	if st, body, _ := e.call("DELETE", stored[0], "ann", "ann-pw", nil, nil); st != http.StatusNoContent {
		t.Fatalf("DELETE on a disk filled to the last byte: %d %s", st, body)
	}
	e.admin("POST", "/api/v1/admin/gc", nil)
	os.Remove(filler)
	e.put("ann", "ann-pw", "/dav/after-filler.bin", again)
	if logs := e.d.Logs(); !strings.Contains(logs, "reserve allocated") {
		t.Fatalf("the daemon did not log the reserve coming back:\n%s", logs)
	}
}

// fillUp writes to path until the file system has no byte left.
func fillUp(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for len(buf) > 0 {
		if _, err := f.Write(buf); err != nil {
			buf = buf[:len(buf)/2] // the last blocks, smaller and smaller
		}
	}
	f.Sync()
}
