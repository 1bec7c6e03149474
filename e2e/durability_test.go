package e2e

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"netdisk/testutil"
)

// cutPut sends a PUT announcing announced bytes, sends only body, and hangs
// up: a client that crashed or lost its connection mid-upload.
func (e *env) cutPut(user, pass, path string, announced int, body []byte) {
	e.t.Helper()
	conn, err := net.DialTimeout("tcp", e.d.Addr, 10*time.Second)
	if err != nil {
		e.t.Fatal(err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	head := fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Basic %s\r\nContent-Length: %d\r\n\r\n",
		path, e.d.Addr, auth, announced)
	w := bufio.NewWriter(conn)
	w.WriteString(head)
	w.Write(body)
	if err := w.Flush(); err != nil {
		e.t.Fatalf("cut PUT %s: %v", path, err)
	}
	conn.Close()
}

var putCountRE = regexp.MustCompile(`netdisk_http_requests_total\{code="(\d+)",method="PUT",surface="dav"\} (\d+)`)

// finishedPuts returns how many WebDAV PUTs the daemon has finished handling,
// by status (from /metrics, counted once a handler returns).
func (e *env) finishedPuts() map[int]int {
	e.t.Helper()
	st, body, _ := e.call("GET", "/metrics", "admin", e.d.AdminPass, nil, nil) // admins only
	if st != http.StatusOK {
		e.t.Fatalf("GET /metrics: %d", st)
	}
	out := map[int]int{}
	for _, m := range putCountRE.FindAllStringSubmatch(string(body), -1) {
		code, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		out[code] += n
	}
	return out
}

func failedPuts(m map[int]int) int {
	n := 0
	for code, c := range m {
		if code >= 400 {
			n += c
		}
	}
	return n
}

// A PUT cut off mid-body leaves the old version byte-identical, makes no new
// name visible, and the chunks it stored are later collected.
func TestInterruptedPutLeavesOldVersion(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	old := testutil.RandBytes(6 << 20) // two chunks: 4 MiB + 2 MiB
	e.put("alice", "alice-pw", "/dav/f.bin", old)
	committed, _ := chunkStoreBytes(t, e.d.DataDir)
	if committed != int64(len(old)) {
		t.Fatalf("chunk store holds %d bytes after one %d-byte file", committed, len(old))
	}

	before := failedPuts(e.finishedPuts())
	// 12 MiB of 20 announced: three whole new chunks reach the store first.
	e.cutPut("alice", "alice-pw", "/dav/f.bin", 20<<20, testutil.RandBytes(12<<20))
	e.cutPut("alice", "alice-pw", "/dav/new.bin", 20<<20, testutil.RandBytes(12<<20))
	waitFor(t, 30*time.Second, "the daemon to finish both cut-off PUTs", func() bool {
		return failedPuts(e.finishedPuts()) >= before+2
	})

	e.mustGet("alice", "alice-pw", "/dav/f.bin", old)
	if st := e.status("GET", "/dav/new.bin", "alice", "alice-pw", nil); st != http.StatusNotFound {
		t.Errorf("GET of the never-completed /dav/new.bin: %d, want 404", st)
	}
	names := e.propfindNames("alice", "alice-pw", "/dav/")
	slices.Sort(names)
	if want := []string{"/dav", "/dav/f.bin"}; !slices.Equal(names, want) {
		t.Errorf("root lists %q, want %q", names, want)
	}
	// Whatever chunks the cut PUTs stored before the body ended (up to three
	// each; how many depends on the hashing workers' timing) are garbage now:
	// gc frees them and only them.
	e.admin("POST", "/api/v1/admin/gc", nil)
	if n, _ := chunkStoreBytes(t, e.d.DataDir); n != committed {
		t.Errorf("after gc the chunk store holds %d bytes, want %d (the live file only)", n, committed)
	}
	e.mustGet("alice", "alice-pw", "/dav/f.bin", old)
}

// Every acknowledged byte survives kill -9 right after the 201/204.
func TestKillAfterPutKeepsAcknowledgedFiles(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	files := map[string][]byte{
		"/dav/one.bin":   testutil.RandBytes(1),
		"/dav/five.bin":  testutil.RandBytes(5 << 20),
		"/dav/nine.bin":  testutil.RandBytes(9<<20 + 17),
		"/dav/empty.bin": {},
	}
	for p, b := range files {
		e.put("alice", "alice-pw", p, b)
	}
	e.mkcol("alice", "alice-pw", "/dav/dir")
	files["/dav/dir/last.bin"] = testutil.RandBytes(4 << 20)
	e.put("alice", "alice-pw", "/dav/dir/last.bin", files["/dav/dir/last.bin"])
	files["/dav/five.bin"] = testutil.RandBytes(3 << 20) // overwrite: the new version must win
	e.put("alice", "alice-pw", "/dav/five.bin", files["/dav/five.bin"])

	e.d.Kill()
	e.c.Transport.(*http.Transport).CloseIdleConnections()
	e.d.Restart()
	for p, b := range files {
		e.mustGet("alice", "alice-pw", p, b)
	}
	if strings.Contains(e.d.Logs(), "panic") {
		t.Errorf("daemon log mentions a panic:\n%s", e.d.Logs())
	}
}
