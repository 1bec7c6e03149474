package api_test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"testing"

	"netdisk/apitype"
	"netdisk/testutil"
)

// A chunk once received is final: the same bytes again are a no-op (200),
// other bytes for that index (correctly hashed) are refused (409) and the
// session, the file and the accounting stay as they were.
func TestReceivedChunkCannotBeReplaced(t *testing.T) {
	x := start(t)
	x.addUser("ann", 0)
	b := testutil.RandBytes(2*cs + 100)
	in := x.init("ann", "/f.bin", int64(len(b)))
	if st := x.put("ann", in.UploadID, b, 0); st != 200 {
		t.Fatalf("chunk 0: %d", st)
	}
	held := x.unfinished("ann")
	if st := x.put("ann", in.UploadID, b, 0); st != 200 {
		t.Fatalf("same chunk again: %d, want 200", st)
	}
	other := testutil.RandBytes(cs)
	if st := x.call("ann", "PUT", chunkURL(in.UploadID, 0, testutil.MD5Hex(other)), other, nil); st != 409 {
		t.Fatalf("other bytes for a received index: %d, want 409", st)
	}
	// patchHash naming other content for that index is refused the same way.
	if st := x.call("ann", "POST", "/api/v1/file/patchHash", map[string]any{"uploadId": in.UploadID, "index": 0, "hash": testutil.MD5Hex(other)}, nil); st != 409 {
		t.Fatalf("patchHash of other content for a received index: %d, want 409", st)
	}
	if got := x.unfinished("ann"); got != held {
		t.Fatalf("unfinished moved from %d to %d", held, got)
	}
	for i := int64(1); i < in.TotalChunks; i++ {
		if st := x.put("ann", in.UploadID, b, i); st != 200 {
			t.Fatalf("chunk %d: %d", i, st)
		}
	}
	var r apitype.FileResult
	if st := x.merge("ann", in.UploadID, fileHash(b), &r); st != 200 {
		t.Fatalf("merge: %d", st)
	}
	got, _ := x.get("ann", "/f.bin")
	if string(got) != string(b) {
		t.Fatal("the file is not the first bytes sent")
	}
}

// merge refuses a file hash other than the one init was given (422); with
// none at init, the merge's hash decides.
func TestMergeHashMustMatchInit(t *testing.T) {
	x := start(t)
	x.addUser("ann", 0)
	a, b := testutil.RandBytes(cs+10), testutil.RandBytes(cs+10)
	var in apitype.Session
	if st := x.call("ann", "POST", "/api/v1/file/init", map[string]any{"path": "/a", "size": len(a), "fileHash": fileHash(a)}, &in); st != 200 {
		t.Fatalf("init: %d", st)
	}
	// The chunks are b's: all present, and b's hash matches them, but init
	// promised a's.
	for i := int64(0); i < in.TotalChunks; i++ {
		if st := x.put("ann", in.UploadID, b, i); st != 200 {
			t.Fatalf("chunk %d: %d", i, st)
		}
	}
	if st := x.merge("ann", in.UploadID, fileHash(b), nil); st != 422 {
		t.Fatalf("merge with another hash than init's: %d, want 422", st)
	}
	if st := x.call("ann", "GET", "/api/v1/file/session?uploadId="+in.UploadID, nil, nil); st != 200 {
		t.Fatalf("the session should still be open: %d", st)
	}
	// Without a hash at init, the merge's (checked against the chunks) is fine.
	r := x.sendAll("ann", "/b", b)
	if r.FileHash != fileHash(b) {
		t.Fatalf("merge without init hash: %+v", r)
	}
}

// rawDo sends body with the given Content-Length (-1: chunked) and returns
// the status and body.
func rawDo(t *testing.T, x *tester, user, method, path string, body io.Reader, length int64, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, x.d.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = length
	req.SetBasicAuth(user, pass(user, x.d))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Every declared or streamed size is bounded by --max-file-size (413), so
// no size near 2^63 reaches the quota arithmetic: init, WebDAV PUT
// (Content-Length, X-Expected-Entity-Length, a chunked body that runs past
// the limit) and the one-request upload.
func TestMaxFileSize(t *testing.T) {
	x := start(t, "--max-file-size", "200KiB")
	x.addUser("ann", 1<<20)
	const limit = 200 << 10
	for _, size := range []int64{limit + 1, 1 << 53, math.MaxInt64 - 1, math.MaxInt64} {
		if st := x.call("ann", "POST", "/api/v1/file/init", map[string]any{"path": "/big", "size": size}, nil); st != 413 {
			t.Fatalf("init of %d bytes: %d, want 413", size, st)
		}
	}
	// At the limit it is fine, and the refused ones reserved nothing: the
	// user's 1 MiB still holds five files of 200 KiB.
	for i := 0; i < 5; i++ {
		x.init("ann", fmt.Sprintf("/ok%d", i), limit)
	}
	if st := x.call("ann", "POST", "/api/v1/file/init", map[string]any{"path": "/over", "size": limit}, nil); st != 507 {
		t.Fatalf("sixth init: %d, want 507 (quota)", st)
	}

	x.addUser("bob", 0)
	if st, _ := rawDo(t, x, "bob", "PUT", "/dav/a", bytes.NewReader(make([]byte, limit+1)), limit+1, nil); st != 413 {
		t.Fatalf("PUT over the limit: %d, want 413", st)
	}
	if st, _ := rawDo(t, x, "bob", "PUT", "/dav/b", io.LimitReader(rand.Reader, 10), -1,
		map[string]string{"X-Expected-Entity-Length": strconv.FormatInt(math.MaxInt64, 10)}); st != 413 {
		t.Fatalf("PUT announcing 2^63-1 bytes: %d, want 413", st)
	}
	if st, _ := rawDo(t, x, "bob", "PUT", "/dav/c", io.LimitReader(rand.Reader, limit+cs), -1, nil); st != 413 {
		t.Fatalf("chunked PUT running past the limit: %d, want 413", st)
	}
	if st, _ := rawDo(t, x, "bob", "PUT", "/api/v1/file/upload?path=/d", bytes.NewReader(make([]byte, limit+1)), limit+1, nil); st != 413 {
		t.Fatalf("one-request upload over the limit: %d, want 413", st)
	}
	for _, p := range []string{"/a", "/b", "/c", "/d"} {
		if st, _ := rawDo(t, x, "bob", "GET", "/dav"+p, nil, 0, nil); st != 404 {
			t.Fatalf("%s after a refused write: %d, want 404", p, st)
		}
	}
	if st, _ := rawDo(t, x, "bob", "PUT", "/dav/e", bytes.NewReader(make([]byte, limit)), limit, nil); st != 201 {
		t.Fatalf("PUT at the limit: %d, want 201", st)
	}
}
