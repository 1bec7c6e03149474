package e2e

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"netdisk/internal/testutil"
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
		st, body, _ := e.call("PUT", p, "ann", "ann-pw", randBytes(t, fileSize), nil)
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
	big := randBytes(t, fileSize)
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
		st, _, _ := e.call("PUT", fmt.Sprintf("/dav/pad%d.bin", i), "ann", "ann-pw", randBytes(t, 1<<20), nil)
		if st != http.StatusCreated {
			break
		}
		stored = append(stored, fmt.Sprintf("/dav/pad%d.bin", i))
	}
	chunk := randBytes(t, 1<<20)
	url := fmt.Sprintf("/api/v1/file/uploadChunk?uploadId=%s&index=0&hash=%s", in.UploadID, md5hex(chunk))
	st, body, _ = e.call("PUT", url, "ann", "ann-pw", chunk, nil)
	wantNoSpace("uploadChunk", st, body, true)

	// Delete two files: the next writes (8 MiB, then 1 MiB) fit at once.
	for _, p := range stored[:2] {
		if st := e.status("DELETE", p, "ann", "ann-pw", nil); st != http.StatusNoContent {
			t.Fatalf("DELETE: %d", st)
		}
	}
	again := randBytes(t, fileSize)
	e.put("ann", "ann-pw", full, again)
	e.mustGet("ann", "ann-pw", full, again)
	if st, body, _ := e.call("PUT", url, "ann", "ann-pw", chunk, nil); st != http.StatusOK {
		t.Fatalf("uploadChunk after the delete: %d %s", st, body)
	}
	if logs := e.d.Logs(); !strings.Contains(logs, "chunk store full") {
		t.Fatalf("the daemon did not log the full store:\n%s", logs)
	}
}

func md5hex(b []byte) string { m := md5.Sum(b); return hex.EncodeToString(m[:]) }
