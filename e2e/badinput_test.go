package e2e

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"netdisk/testutil"
)

// An unknown user and a wrong password get the same answer, so names cannot
// be probed.
func TestWrongCredentialsSameAnswer(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	e.put("alice", "alice-pw", "/dav/f.txt", []byte("x"))
	type answer struct {
		status int
		body   string
		auth   string
	}
	ask := func(user, pass string) answer {
		st, body, h := e.call("GET", "/dav/f.txt", user, pass, nil, nil)
		return answer{st, string(body), h.Get("WWW-Authenticate")}
	}
	unknown := ask("nobody", "alice-pw")
	wrong := ask("alice", "not-the-password")
	if unknown.status != http.StatusUnauthorized || unknown.auth == "" {
		t.Errorf("unknown user: %+v, want 401 with WWW-Authenticate", unknown)
	}
	if unknown != wrong {
		t.Errorf("unknown user and wrong password answered differently:\n%+v\n%+v", unknown, wrong)
	}
	if st := e.status("GET", "/dav/f.txt", "", "", nil); st != http.StatusUnauthorized {
		t.Errorf("no credentials: %d, want 401", st)
	}
	if st := e.status("GET", "/dav/f.txt", "alice", "alice-pw", nil); st != http.StatusOK {
		t.Errorf("right credentials after failures: %d", st)
	}
}

// Headers beyond the server's limit get 431, and the daemon keeps serving.
func TestHugeHeaders(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	st, _, _ := e.call("GET", "/dav/", "alice", "alice-pw", nil, map[string]string{"X-Big": strings.Repeat("a", 256<<10)})
	if st != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("256 KiB header: %d, want 431", st)
	}
	if st := e.status("PROPFIND", "/dav/", "alice", "alice-pw", map[string]string{"Depth": "0"}); st != http.StatusMultiStatus {
		t.Errorf("after a huge header the daemon answers %d", st)
	}
}

// Paths that are not acceptable names get 400 and create nothing.
func TestMalformedPaths(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	e.mkcol("alice", "alice-pw", "/dav/a")
	before := e.propfindNames("alice", "alice-pw", "/dav/")
	bad := []string{
		"/dav/../x.txt",
		"/dav/a/../../x.txt",
		"/dav/%2e%2e/x.txt",
		"/dav/a/..%2f..%2fx.txt",
		"/dav/a/%2E%2E/x.txt",
		"/dav/x%00y.txt",
		"/dav/x%01y.txt",
		"/dav/%ff%fe.txt",
		"/dav/" + strings.Repeat("n", 300) + ".txt",
	}
	for _, p := range bad {
		for _, m := range []string{"PUT", "GET", "MKCOL", "PROPFIND", "DELETE"} {
			st, body := e.rawRequest(m, p, "alice", "alice-pw", e.plainHeaders(m))
			if st != http.StatusBadRequest {
				t.Errorf("%s %.60s: %d %.100q, want 400", m, p, st, body)
			}
		}
	}
	if after := e.propfindNames("alice", "alice-pw", "/dav/"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("malformed requests changed the root: %q → %q", before, after)
	}
	if got := e.propfindNames("alice", "alice-pw", "/dav/a/"); len(got) != 1 {
		t.Errorf("malformed requests changed /a: %q", got)
	}
}

// macOS Finder sends PUT with a chunked body and the size in
// X-Expected-Entity-Length instead of Content-Length.
func TestFinderChunkedPut(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	data := testutil.RandBytes(5<<20 + 3)
	chunked := func(path string, body []byte, expected int) int {
		// A reader of unknown length makes net/http send Transfer-Encoding: chunked.
		rd := io.MultiReader(bytes.NewReader(body[:len(body)/2]), bytes.NewReader(body[len(body)/2:]))
		resp := e.do("PUT", path, "alice", "alice-pw", rd, map[string]string{"X-Expected-Entity-Length": fmt.Sprint(expected)})
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := chunked("/dav/finder.bin", data, len(data)); st != http.StatusCreated {
		t.Fatalf("chunked PUT with X-Expected-Entity-Length: %d, want 201", st)
	}
	e.mustGet("alice", "alice-pw", "/dav/finder.bin", data)
	// A body shorter than announced is refused and the old version stays.
	if st := chunked("/dav/finder.bin", data[:1000], len(data)); st/100 != 4 {
		t.Errorf("chunked PUT shorter than X-Expected-Entity-Length: %d, want 4xx", st)
	}
	e.mustGet("alice", "alice-pw", "/dav/finder.bin", data)
}

// Range requests, single, suffix, across a chunk boundary, multi-range and
// unsatisfiable.
func TestRangeRequests(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	size := 9<<20 + 5
	data := testutil.RandBytes(size)
	e.put("alice", "alice-pw", "/dav/r.bin", data)
	get := func(rng string) (int, []byte, http.Header) {
		return e.call("GET", "/dav/r.bin", "alice", "alice-pw", nil, map[string]string{"Range": rng})
	}
	for _, c := range []struct {
		rng        string
		start, end int // inclusive
	}{
		{"bytes=100-199", 100, 199},
		{"bytes=-500", size - 500, size - 1},
		{fmt.Sprintf("bytes=%d-%d", 4<<20-10, 4<<20+10), 4<<20 - 10, 4<<20 + 10},
		{fmt.Sprintf("bytes=%d-", 8<<20), 8 << 20, size - 1},
		{"bytes=0-", 0, size - 1},
	} {
		st, body, h := get(c.rng)
		want := fmt.Sprintf("bytes %d-%d/%d", c.start, c.end, size)
		if st != http.StatusPartialContent || h.Get("Content-Range") != want {
			t.Errorf("%s: %d Content-Range %q, want 206 %q", c.rng, st, h.Get("Content-Range"), want)
			continue
		}
		if !bytes.Equal(body, data[c.start:c.end+1]) {
			t.Errorf("%s: wrong bytes", c.rng)
		}
	}

	st, body, h := get("bytes=0-9,4194300-4194309,-3")
	mt, params, _ := mime.ParseMediaType(h.Get("Content-Type"))
	if st != http.StatusPartialContent || mt != "multipart/byteranges" {
		t.Fatalf("multi-range: %d %q", st, h.Get("Content-Type"))
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	wants := [][2]int{{0, 9}, {4194300, 4194309}, {size - 3, size - 1}}
	for i := 0; ; i++ {
		part, err := mr.NextPart()
		if err == io.EOF {
			if i != len(wants) {
				t.Errorf("multi-range: %d parts, want %d", i, len(wants))
			}
			break
		}
		if err != nil || i >= len(wants) {
			t.Fatalf("multi-range part %d: %v", i, err)
		}
		got, _ := io.ReadAll(part)
		w := wants[i]
		if cr := part.Header.Get("Content-Range"); cr != fmt.Sprintf("bytes %d-%d/%d", w[0], w[1], size) || !bytes.Equal(got, data[w[0]:w[1]+1]) {
			t.Errorf("multi-range part %d: %q, %d bytes", i, cr, len(got))
		}
	}

	st, _, h = get(fmt.Sprintf("bytes=%d-", size+10))
	if st != http.StatusRequestedRangeNotSatisfiable || h.Get("Content-Range") != fmt.Sprintf("bytes */%d", size) {
		t.Errorf("unsatisfiable range: %d %q, want 416 bytes */%d", st, h.Get("Content-Range"), size)
	}
}

// ETag is the file hash; If-None-Match answers 304 until the content changes.
func TestETagConditionalGet(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	e.put("alice", "alice-pw", "/dav/e.txt", []byte("version one"))
	st, _, h := e.call("GET", "/dav/e.txt", "alice", "alice-pw", nil, nil)
	etag := h.Get("ETag")
	if st != http.StatusOK || len(etag) < 3 || etag[0] != '"' {
		t.Fatalf("GET: %d ETag %q", st, etag)
	}
	if h.Get("Last-Modified") == "" {
		t.Errorf("GET has no Last-Modified")
	}
	if st := e.status("GET", "/dav/e.txt", "alice", "alice-pw", map[string]string{"If-None-Match": etag}); st != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag: %d, want 304", st)
	}
	// Same content under another name: same ETag (content identity).
	e.put("alice", "alice-pw", "/dav/same.txt", []byte("version one"))
	if _, _, h2 := e.call("HEAD", "/dav/same.txt", "alice", "alice-pw", nil, nil); h2.Get("ETag") != etag {
		t.Errorf("equal content, different ETags: %q %q", etag, h2.Get("ETag"))
	}
	e.put("alice", "alice-pw", "/dav/e.txt", []byte("version two"))
	st, body, h := e.call("GET", "/dav/e.txt", "alice", "alice-pw", nil, map[string]string{"If-None-Match": etag})
	if st != http.StatusOK || string(body) != "version two" || h.Get("ETag") == etag {
		t.Errorf("after overwrite, If-None-Match old tag: %d %q ETag %q", st, body, h.Get("ETag"))
	}
}

// Methods on a name that does not exist get 404 (not 405 or 500), and
// change nothing.
func TestMissingResource404(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	for _, m := range []string{"GET", "HEAD", "DELETE", "PROPFIND", "PROPPATCH", "COPY", "MOVE"} {
		if st := e.status(m, "/dav/missing.txt", "alice", "alice-pw", e.plainHeaders(m)); st != http.StatusNotFound {
			t.Errorf("%s of a missing file: %d, want 404", m, st)
		}
	}
	if got := e.propfindNames("alice", "alice-pw", "/dav/"); len(got) != 1 {
		t.Errorf("root changed: %q", got)
	}
}

// A client that never finishes its headers is cut off by the server's header
// timeout rather than holding a connection forever; here we only check that
// a slow client does not block others.
func TestSlowClientDoesNotBlockOthers(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	conn, err := net.Dial("tcp", e.d.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("PUT /dav/slow HTTP/1.1\r\nHost: x\r\n")) // headers never finished
	done := make(chan int, 1)
	go func() { done <- e.status("PROPFIND", "/dav/", "alice", "alice-pw", map[string]string{"Depth": "0"}) }()
	select {
	case st := <-done:
		if st != http.StatusMultiStatus {
			t.Errorf("PROPFIND beside a stalled client: %d", st)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a stalled client blocked another request")
	}
}

// plainHeaders are the headers WebDAV method m needs to be a well-formed
// request, so that what a test varies (the path, the resource) is what the
// server answers about: Depth 0 for PROPFIND, a Destination for COPY and
// MOVE.
func (e *env) plainHeaders(m string) map[string]string {
	switch m {
	case "COPY", "MOVE":
		return map[string]string{"Destination": e.d.URL + "/dav/copy.txt"}
	case "PROPFIND":
		return map[string]string{"Depth": "0"}
	}
	return nil
}
