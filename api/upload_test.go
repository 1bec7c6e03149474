package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"netdisk/apitype"
	"netdisk/chunker"
	"netdisk/testutil"
)

const cs = 64 << 10 // the daemon's chunk size in these tests

type tester struct {
	t *testing.T
	d *testutil.Daemon
}

func start(t *testing.T, extra ...string) *tester {
	t.Helper()
	return &tester{t: t, d: testutil.StartDaemon(t, append([]string{"--chunk-size", "64KiB"}, extra...)...)}
}

// call sends a request as user and decodes a JSON answer into out (when not nil).
func (x *tester) call(user, method, path string, body any, out any) int {
	x.t.Helper()
	var b []byte
	switch v := body.(type) {
	case nil:
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		b, _ = json.Marshal(v)
	}
	resp, err := x.d.Do(context.Background(), method, path, user, pass(user, x.d), b, nil)
	if err != nil {
		x.t.Fatal(err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		var e struct{ Error string }
		if json.Unmarshal(rb, &e) != nil || e.Error == "" {
			x.t.Errorf("%s %s: status %d without a JSON error: %q", method, path, resp.StatusCode, rb)
		}
	}
	if out != nil && len(rb) > 0 {
		if err := json.Unmarshal(rb, out); err != nil {
			x.t.Fatalf("%s %s: %d %q: %v", method, path, resp.StatusCode, rb, err)
		}
	}
	return resp.StatusCode
}

func pass(user string, d *testutil.Daemon) string {
	if user == "admin" {
		return d.AdminPass
	}
	return "pw-" + user
}

func (x *tester) addUser(name string, quota int64) {
	x.t.Helper()
	if st := x.call("admin", "POST", "/api/v1/admin/users", map[string]any{"name": name, "password": "pw-" + name, "quota": quota}, nil); st != 201 {
		x.t.Fatalf("add user %s: %d", name, st)
	}
}

func chunkAt(b []byte, i int64) []byte { return b[i*cs : min((i+1)*cs, int64(len(b)))] }

func fileHash(b []byte) string {
	var hs []string
	for i := int64(0); i*cs < int64(len(b)); i++ {
		hs = append(hs, testutil.MD5Hex(chunkAt(b, i)))
	}
	return chunker.FileHash(hs)
}

func (x *tester) init(user, path string, size int64) apitype.Session {
	x.t.Helper()
	var in apitype.Session
	if st := x.call(user, "POST", "/api/v1/file/init", map[string]any{"path": path, "size": size}, &in); st != 200 {
		x.t.Fatalf("init %s: %d", path, st)
	}
	return in
}

func chunkURL(id string, i int64, hash string) string {
	return fmt.Sprintf("/api/v1/file/uploadChunk?uploadId=%s&index=%d&hash=%s", id, i, hash)
}

func (x *tester) put(user, id string, b []byte, i int64) int {
	x.t.Helper()
	c := chunkAt(b, i)
	return x.call(user, "PUT", chunkURL(id, i, testutil.MD5Hex(c)), c, nil)
}

func (x *tester) merge(user, id, fh string, out any) int {
	x.t.Helper()
	return x.call(user, "POST", "/api/v1/file/merge", map[string]any{"uploadId": id, "fileHash": fh}, out)
}

func (x *tester) get(user, path string) ([]byte, http.Header) {
	x.t.Helper()
	resp, err := x.d.Do(context.Background(), "GET", "/dav"+path, user, pass(user, x.d), nil, nil)
	if err != nil {
		x.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		x.t.Fatalf("GET /dav%s: %d", path, resp.StatusCode)
	}
	return b, resp.Header
}

// sendAll uploads a whole file through the protocol and returns the merge result.
func (x *tester) sendAll(user, path string, b []byte) apitype.FileResult {
	x.t.Helper()
	in := x.init(user, path, int64(len(b)))
	for i := int64(0); i < in.TotalChunks; i++ {
		if st := x.put(user, in.UploadID, b, i); st != 200 {
			x.t.Fatalf("chunk %d: %d", i, st)
		}
	}
	var r apitype.FileResult
	if st := x.merge(user, in.UploadID, fileHash(b), &r); st != 200 {
		x.t.Fatalf("merge: %d", st)
	}
	return r
}

func (x *tester) stats() (chunks int64) {
	var s struct{ Chunks int64 }
	x.call("admin", "GET", "/api/v1/admin/stats", nil, &s)
	return s.Chunks
}

func (x *tester) unfinished(user string) int64 {
	var u struct{ Unfinished int64 }
	x.call("admin", "GET", "/api/v1/admin/users/"+user, nil, &u)
	return u.Unfinished
}

func TestUploadProtocol(t *testing.T) {
	x := start(t)
	x.addUser("alice", 0)
	var inf struct {
		ChunkSize      int64 `json:"chunkSize"`
		SmallFileLimit int64 `json:"smallFileLimit"`
	}
	x.call("", "GET", "/api/v1/info", nil, &inf)
	if inf.ChunkSize != cs || inf.SmallFileLimit != chunker.SmallFileLimit {
		t.Fatalf("info = %+v", inf)
	}
	b := testutil.RandBytes(3*cs + 123)
	in := x.init("alice", "/docs/a.bin", int64(len(b)))
	if in.TotalChunks != 4 || in.ChunkSize != cs || in.Uploaded == nil || len(in.Uploaded) != 0 {
		t.Fatalf("init = %+v", in)
	}
	var ph map[string]any
	x.call("alice", "POST", "/api/v1/file/patchHash", map[string]any{"uploadId": in.UploadID, "index": 0, "hash": testutil.MD5Hex(chunkAt(b, 0))}, &ph)
	if ph["exists"] != false {
		t.Fatalf("patchHash of a new chunk = %v", ph)
	}
	for _, i := range []int64{3, 0, 2} {
		if st := x.put("alice", in.UploadID, b, i); st != 200 {
			t.Fatalf("chunk %d: %d", i, st)
		}
	}
	// Idempotent.
	if st := x.put("alice", in.UploadID, b, 2); st != 200 {
		t.Fatalf("repeated chunk: %d", st)
	}
	var sess apitype.Session
	x.call("alice", "GET", "/api/v1/file/session?uploadId="+in.UploadID, nil, &sess)
	if fmt.Sprint(sess.Uploaded) != "[0 2 3]" || sess.UploadID != in.UploadID {
		t.Fatalf("session = %+v", sess)
	}
	if u := x.unfinished("alice"); u != 2*cs+123 {
		t.Fatalf("unfinished = %d", u)
	}
	var miss struct {
		Error   string
		Missing []int64
	}
	if st := x.merge("alice", in.UploadID, fileHash(b), &miss); st != 409 || fmt.Sprint(miss.Missing) != "[1]" {
		t.Fatalf("merge with a missing chunk = %d %+v", st, miss)
	}
	x.put("alice", in.UploadID, b, 1)
	if st := x.merge("alice", in.UploadID, testutil.MD5Hex([]byte("wrong")), nil); st != 422 {
		t.Fatalf("merge with a wrong hash = %d, want 422", st)
	}
	var r1, r2 apitype.FileResult
	if st := x.merge("alice", in.UploadID, fileHash(b), &r1); st != 200 {
		t.Fatalf("merge = %d", st)
	}
	want := apitype.FileResult{Path: "/docs/a.bin", Size: int64(len(b)), FileHash: fileHash(b)}
	if r1 != want {
		t.Fatalf("merge = %+v, want %+v", r1, want)
	}
	if st := x.merge("alice", in.UploadID, fileHash(b), &r2); st != 200 || r2 != r1 {
		t.Fatalf("retried merge = %d %+v", st, r2)
	}
	got, hdr := x.get("alice", "/docs/a.bin")
	if !bytes.Equal(got, b) || hdr.Get("ETag") != `"`+fileHash(b)+`"` {
		t.Fatalf("downloaded file differs (etag %s)", hdr.Get("ETag"))
	}
	if u := x.unfinished("alice"); u != 0 {
		t.Fatalf("unfinished after merge = %d", u)
	}
	// Abandon a second session: 204 and its bytes are released.
	in2 := x.init("alice", "/docs/b.bin", 2*cs)
	x.put("alice", in2.UploadID, testutil.RandBytes(2*cs), 0)
	if st := x.call("alice", "DELETE", "/api/v1/file/session?uploadId="+in2.UploadID, nil, nil); st != 204 {
		t.Fatalf("delete session = %d", st)
	}
	if u := x.unfinished("alice"); u != 0 {
		t.Fatalf("unfinished after abort = %d", u)
	}
	if st := x.call("alice", "GET", "/api/v1/file/session?uploadId="+in2.UploadID, nil, nil); st != 404 {
		t.Fatalf("aborted session = %d, want 404", st)
	}
	// Empty file.
	in3 := x.init("alice", "/empty", 0)
	if in3.TotalChunks != 0 {
		t.Fatalf("empty init = %+v", in3)
	}
	var r3 apitype.FileResult
	if st := x.merge("alice", in3.UploadID, testutil.MD5Hex(nil), &r3); st != 200 || r3.Size != 0 {
		t.Fatalf("empty merge = %d %+v", st, r3)
	}
}

func TestResumeAfterKill(t *testing.T) {
	x := start(t)
	x.addUser("alice", 0)
	b := testutil.RandBytes(5*cs + 7)
	in := x.init("alice", "/big.bin", int64(len(b)))
	for _, i := range []int64{0, 1, 4} {
		x.put("alice", in.UploadID, b, i)
	}
	x.d.Kill()
	x.d.Restart()
	again := x.init("alice", "/big.bin", int64(len(b)))
	if again.UploadID != in.UploadID || fmt.Sprint(again.Uploaded) != "[0 1 4]" {
		t.Fatalf("resume after kill -9 = %+v, want %s [0 1 4]", again, in.UploadID)
	}
	for _, i := range []int64{2, 3, 5} {
		if st := x.put("alice", in.UploadID, b, i); st != 200 {
			t.Fatalf("chunk %d: %d", i, st)
		}
	}
	if st := x.merge("alice", in.UploadID, fileHash(b), nil); st != 200 {
		t.Fatalf("merge = %d", st)
	}
	if got, _ := x.get("alice", "/big.bin"); !bytes.Equal(got, b) {
		t.Fatal("file differs after resume")
	}
}

func proof(nonce string, content []byte, ranges [][2]int64) string {
	h := sha256.New()
	h.Write([]byte(nonce))
	for _, r := range ranges {
		h.Write(content[r[0] : r[0]+r[1]])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestInstantUpload(t *testing.T) {
	// Shared mode: one other owner is enough to be offered a challenge
	// (private_test.go covers the default).
	x := start(t, "--instant-upload=shared")
	for _, u := range []string{"alice", "bob", "carol"} {
		x.addUser(u, 0)
	}
	b := testutil.RandBytes(2*cs + 99)
	fh := fileHash(b)
	x.sendAll("alice", "/orig.bin", b)
	chunks := x.stats()

	// Same user: completed at once, no challenge, no bytes.
	in := x.init("alice", "/again.bin", int64(len(b)))
	var pa apitype.PatchHashResult
	x.call("alice", "POST", "/api/v1/file/patchHash", map[string]any{"uploadId": in.UploadID, "fileHash": fh, "fileSha256": fileSHA(b)}, &pa)
	if !pa.Exists || !pa.Completed || pa.Path != "/again.bin" || pa.Challenge != nil {
		t.Fatalf("same-user patchHash = %+v", pa)
	}
	if got, _ := x.get("alice", "/again.bin"); !bytes.Equal(got, b) {
		t.Fatal("instant copy differs")
	}

	// Another user: a challenge; a wrong proof fails, and so does replaying
	// the right answer to a used challenge.
	in = x.init("bob", "/mine.bin", int64(len(b)))
	pa = apitype.PatchHashResult{}
	x.call("bob", "POST", "/api/v1/file/patchHash", map[string]any{"uploadId": in.UploadID, "fileHash": fh, "fileSha256": fileSHA(b)}, &pa)
	if !pa.Exists || pa.Completed || pa.Challenge == nil || len(pa.Challenge.Ranges) == 0 {
		t.Fatalf("cross-user patchHash = %+v", pa)
	}
	var pr apitype.ProveResult
	x.call("bob", "POST", "/api/v1/file/prove", map[string]any{"uploadId": in.UploadID, "nonce": pa.Challenge.Nonce, "proof": proof(pa.Challenge.Nonce, testutil.RandBytes(len(b)), pa.Challenge.Ranges)}, &pr)
	if pr.OK {
		t.Fatal("a wrong proof was accepted")
	}
	x.call("bob", "POST", "/api/v1/file/prove", map[string]any{"uploadId": in.UploadID, "nonce": pa.Challenge.Nonce, "proof": proof(pa.Challenge.Nonce, b, pa.Challenge.Ranges)}, &pr)
	if pr.OK {
		t.Fatal("a used challenge was accepted")
	}
	if st := x.call("bob", "GET", "/api/v1/fs/stat?path=/mine.bin", nil, nil); st != 404 {
		t.Fatalf("file exists after failed proofs: %d", st)
	}
	x.call("bob", "POST", "/api/v1/file/patchHash", map[string]any{"uploadId": in.UploadID, "fileHash": fh, "fileSha256": fileSHA(b)}, &pa)
	pr = apitype.ProveResult{}
	x.call("bob", "POST", "/api/v1/file/prove", map[string]any{"uploadId": in.UploadID, "nonce": pa.Challenge.Nonce, "proof": proof(pa.Challenge.Nonce, b, pa.Challenge.Ranges)}, &pr)
	if !pr.OK || !pr.Completed || pr.Path != "/mine.bin" {
		t.Fatalf("right proof = %+v", pr)
	}
	if got, _ := x.get("bob", "/mine.bin"); !bytes.Equal(got, b) {
		t.Fatal("bob's instant file differs")
	}

	// Chunk level: carol proves one chunk, uploads the rest.
	in = x.init("carol", "/c.bin", int64(len(b)))
	pa = apitype.PatchHashResult{}
	x.call("carol", "POST", "/api/v1/file/patchHash", map[string]any{"uploadId": in.UploadID, "index": 1, "hash": testutil.MD5Hex(chunkAt(b, 1)), "sha256": sha256hex(chunkAt(b, 1))}, &pa)
	if !pa.Exists || pa.Challenge == nil {
		t.Fatalf("cross-user chunk patchHash = %+v", pa)
	}
	c1 := chunkAt(b, 1)
	x.call("carol", "POST", "/api/v1/file/prove", map[string]any{"uploadId": in.UploadID, "index": 1, "nonce": pa.Challenge.Nonce, "proof": proof(pa.Challenge.Nonce, c1, pa.Challenge.Ranges)}, &pr)
	if !pr.OK {
		t.Fatalf("right chunk proof = %+v", pr)
	}
	x.put("carol", in.UploadID, b, 0)
	x.put("carol", in.UploadID, b, 2)
	if st := x.merge("carol", in.UploadID, fh, nil); st != 200 {
		t.Fatalf("merge = %d", st)
	}
	if got, _ := x.get("carol", "/c.bin"); !bytes.Equal(got, b) {
		t.Fatal("carol's file differs")
	}
	if now := x.stats(); now != chunks {
		t.Fatalf("chunks %d -> %d: identical content was stored again", chunks, now)
	}
}

func TestBadInputsChangeNothing(t *testing.T) {
	x := start(t)
	x.addUser("alice", 10*cs)
	x.addUser("bob", 0)
	b := testutil.RandBytes(2*cs + 10)
	in := x.init("alice", "/f.bin", int64(len(b)))
	x.put("alice", in.UploadID, b, 0)
	x.call("alice", "POST", "/api/v1/fs/mkdir", map[string]any{"path": "/dir"}, nil)
	x.call("alice", "PUT", "/api/v1/file/upload?path=/f2", []byte("hello"), nil) // for "init under a file"
	before := x.unfinished("alice")
	unknown := "0123456789abcdef0123456789abcdef"
	c1 := chunkAt(b, 1)
	cases := []struct {
		name, user, method, path string
		body                     any
		want                     int
	}{
		{"unknown session chunk", "alice", "PUT", chunkURL(unknown, 1, testutil.MD5Hex(c1)), c1, 404},
		{"someone else's session chunk", "bob", "PUT", chunkURL(in.UploadID, 1, testutil.MD5Hex(c1)), c1, 404},
		{"someone else's session GET", "bob", "GET", "/api/v1/file/session?uploadId=" + in.UploadID, nil, 404},
		{"someone else's session DELETE", "bob", "DELETE", "/api/v1/file/session?uploadId=" + in.UploadID, nil, 404},
		{"someone else's merge", "bob", "POST", "/api/v1/file/merge", map[string]any{"uploadId": in.UploadID, "fileHash": fileHash(b)}, 404},
		{"someone else's patchHash", "bob", "POST", "/api/v1/file/patchHash", map[string]any{"uploadId": in.UploadID, "fileHash": fileHash(b)}, 404},
		{"unknown session merge", "alice", "POST", "/api/v1/file/merge", map[string]any{"uploadId": unknown, "fileHash": fileHash(b)}, 404},
		{"garbage session id", "alice", "GET", "/api/v1/file/session?uploadId=../../x", nil, 404},
		{"index out of range", "alice", "PUT", chunkURL(in.UploadID, 3, testutil.MD5Hex(c1)), c1, 409},
		{"negative index", "alice", "PUT", chunkURL(in.UploadID, -1, testutil.MD5Hex(c1)), c1, 409},
		{"patchHash out of range", "alice", "POST", "/api/v1/file/patchHash", map[string]any{"uploadId": in.UploadID, "index": 9, "hash": testutil.MD5Hex(c1)}, 409},
		{"hash mismatch", "alice", "PUT", chunkURL(in.UploadID, 1, testutil.MD5Hex([]byte("x"))), c1, 400},
		{"bad hash", "alice", "PUT", chunkURL(in.UploadID, 1, "XYZ"), c1, 400},
		{"non-numeric index", "alice", "PUT", "/api/v1/file/uploadChunk?uploadId=" + in.UploadID + "&index=a&hash=" + testutil.MD5Hex(c1), c1, 400},
		{"short chunk", "alice", "PUT", chunkURL(in.UploadID, 1, testutil.MD5Hex(c1[:10])), c1[:10], 400},
		{"last chunk too long", "alice", "PUT", chunkURL(in.UploadID, 2, testutil.MD5Hex(c1[:11])), c1[:11], 400},
		{"oversized body", "alice", "PUT", chunkURL(in.UploadID, 1, testutil.MD5Hex(testutil.RandBytes(cs+1))), testutil.RandBytes(cs + 1), 413},
		{"bad JSON init", "alice", "POST", "/api/v1/file/init", "{nope", 400},
		{"bad JSON merge", "alice", "POST", "/api/v1/file/merge", "[1,2]", 400},
		{"bad JSON patchHash", "alice", "POST", "/api/v1/file/patchHash", "", 400},
		{"init without size", "alice", "POST", "/api/v1/file/init", map[string]any{"path": "/x"}, 400},
		{"init negative size", "alice", "POST", "/api/v1/file/init", map[string]any{"path": "/x", "size": -1}, 400},
		{"init dotdot", "alice", "POST", "/api/v1/file/init", map[string]any{"path": "/../etc/passwd", "size": 1}, 400},
		{"init NUL", "alice", "POST", "/api/v1/file/init", map[string]any{"path": "/a\x00b", "size": 1}, 400},
		{"init bad fileHash", "alice", "POST", "/api/v1/file/init", map[string]any{"path": "/x", "size": 1, "fileHash": "zz"}, 400},
		{"init on a directory", "alice", "POST", "/api/v1/file/init", map[string]any{"path": "/dir", "size": 1}, 409},
		{"init under a file", "alice", "POST", "/api/v1/file/init", map[string]any{"path": "/f2/x", "size": 1}, 409},
		{"init over quota", "alice", "POST", "/api/v1/file/init", map[string]any{"path": "/huge", "size": 20 * cs}, 507},
		{"merge bad hash", "alice", "POST", "/api/v1/file/merge", map[string]any{"uploadId": in.UploadID, "fileHash": "nothex"}, 400},
		{"prove unknown session", "alice", "POST", "/api/v1/file/prove", map[string]any{"uploadId": unknown, "nonce": "a", "proof": "b"}, 404},
		{"no auth", "", "POST", "/api/v1/file/init", map[string]any{"path": "/x", "size": 1}, 401},
	}
	for _, c := range cases {
		if st := x.call(c.user, c.method, c.path, c.body, nil); st != c.want {
			t.Errorf("%s: status %d, want %d", c.name, st, c.want)
		}
	}
	var sess apitype.Session
	x.call("alice", "GET", "/api/v1/file/session?uploadId="+in.UploadID, nil, &sess)
	if fmt.Sprint(sess.Uploaded) != "[0]" {
		t.Fatalf("session changed: %+v", sess)
	}
	if u := x.unfinished("alice"); u != before {
		t.Fatalf("unfinished %d -> %d", before, u)
	}
	var ls struct{ Entries []map[string]any }
	x.call("alice", "GET", "/api/v1/fs/list?path=/", nil, &ls)
	if len(ls.Entries) != 2 { // /dir and /f2
		t.Fatalf("root has %d entries: %v", len(ls.Entries), ls.Entries)
	}
}

func TestConcurrentSameChunkStoredOnce(t *testing.T) {
	x := start(t)
	users := []string{"u1", "u2", "u3", "u4"}
	for _, u := range users {
		x.addUser(u, 0)
	}
	b := testutil.RandBytes(3 * cs)
	base := x.stats()
	var wg sync.WaitGroup
	for _, u := range users {
		in := x.init(u, "/same.bin", int64(len(b)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(0); i < 3; i++ {
				if st := x.put(u, in.UploadID, b, i); st != 200 {
					t.Errorf("%s chunk %d: %d", u, i, st)
				}
			}
			if st := x.merge(u, in.UploadID, fileHash(b), nil); st != 200 {
				t.Errorf("%s merge: %d", u, st)
			}
		}()
	}
	wg.Wait()
	if got := x.stats() - base; got != 3 {
		t.Fatalf("%d chunk records for 3 distinct chunks", got)
	}
	for _, u := range users {
		if got, _ := x.get(u, "/same.bin"); !bytes.Equal(got, b) {
			t.Fatalf("%s's file differs", u)
		}
	}
}

func TestConcurrentMergesToOnePath(t *testing.T) {
	x := start(t)
	x.addUser("alice", 0)
	contents := [][]byte{testutil.RandBytes(4*cs + 1), testutil.RandBytes(3*cs + 2)}
	ids := make([]string, 2)
	for k, b := range contents {
		in := x.init("alice", "/race.bin", int64(len(b)))
		ids[k] = in.UploadID
		for i := int64(0); i < in.TotalChunks; i++ {
			x.put("alice", in.UploadID, b, i)
		}
	}
	if ids[0] == ids[1] {
		t.Fatal("different sizes shared a session")
	}
	var wg sync.WaitGroup
	for k := range contents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st := x.merge("alice", ids[k], fileHash(contents[k]), nil); st != 200 {
				t.Errorf("merge %d: %d", k, st)
			}
		}()
	}
	wg.Wait()
	got, hdr := x.get("alice", "/race.bin")
	switch {
	case bytes.Equal(got, contents[0]) && hdr.Get("ETag") == `"`+fileHash(contents[0])+`"`:
	case bytes.Equal(got, contents[1]) && hdr.Get("ETag") == `"`+fileHash(contents[1])+`"`:
	default:
		t.Fatal("the file is neither upload: a mix")
	}
}

// The same content sent by the API and by WebDAV PUT ends as the same chunks.
func TestSameChunksAsWebDAV(t *testing.T) {
	x := start(t)
	x.addUser("alice", 0)
	b := testutil.RandBytes(3*cs + 500)
	resp, err := x.d.Do(context.Background(), "PUT", "/dav/dav.bin", "alice", "pw-alice", b, nil)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("PUT: %v %v", err, resp.Status)
	}
	resp.Body.Close()
	base := x.stats()
	r := x.sendAll("alice", "/api.bin", b)
	var st struct{ FileHash string }
	x.call("alice", "GET", "/api/v1/fs/stat?path=/dav.bin", nil, &st)
	if st.FileHash != r.FileHash || r.FileHash != fileHash(b) {
		t.Fatalf("file hash via WebDAV %s, via API %s", st.FileHash, r.FileHash)
	}
	if now := x.stats(); now != base {
		t.Fatalf("API upload added %d chunk records: boundaries differ from WebDAV's", now-base)
	}
	// The small-file endpoint cuts the same way.
	var small apitype.FileResult
	x.call("alice", "PUT", "/api/v1/file/upload?path=/small/s.bin", b, &small)
	if small.FileHash != r.FileHash || x.stats() != base {
		t.Fatalf("small upload = %+v", small)
	}
}

func TestFileOps(t *testing.T) {
	x := start(t)
	x.addUser("alice", 0)
	if st := x.call("alice", "POST", "/api/v1/fs/mkdir", map[string]any{"path": "/a/b/c"}, nil); st != 409 {
		t.Fatalf("mkdir without parents = %d, want 409", st)
	}
	var n map[string]any
	if st := x.call("alice", "POST", "/api/v1/fs/mkdir", map[string]any{"path": "/a/b/c", "parents": true}, &n); st != 201 || n["isDir"] != true || n["name"] != "c" {
		t.Fatalf("mkdir -p = %d %v", st, n)
	}
	if st := x.call("alice", "POST", "/api/v1/fs/mkdir", map[string]any{"path": "/a/b/c", "parents": true}, nil); st != 200 {
		t.Fatalf("mkdir -p existing = %d", st)
	}
	var up apitype.FileResult
	x.call("alice", "PUT", "/api/v1/file/upload?path=/a/f.txt", []byte("hello"), &up)
	x.call("alice", "GET", "/api/v1/fs/stat?path=/a/f.txt", nil, &n)
	if n["size"] != float64(5) || n["fileHash"] != up.FileHash || n["mode"] != float64(0o644) || n["mtime"] == "" {
		t.Fatalf("stat = %v", n)
	}
	if st := x.call("alice", "POST", "/api/v1/fs/copy", map[string]any{"from": "/a", "to": "/a2"}, nil); st != 200 {
		t.Fatalf("copy = %d", st)
	}
	if st := x.call("alice", "POST", "/api/v1/fs/move", map[string]any{"from": "/a2/f.txt", "to": "/a/f.txt"}, nil); st != 409 {
		t.Fatalf("move onto existing without overwrite = %d", st)
	}
	if st := x.call("alice", "POST", "/api/v1/fs/move", map[string]any{"from": "/a2/f.txt", "to": "/g.txt", "overwrite": true}, nil); st != 200 {
		t.Fatalf("move = %d", st)
	}
	var ls struct {
		Path    string
		Entries []struct{ Name string }
	}
	x.call("alice", "GET", "/api/v1/fs/list?path=/", nil, &ls)
	if fmt.Sprint(ls.Entries) != "[{a} {a2} {g.txt}]" {
		t.Fatalf("list = %+v", ls)
	}
	if st := x.call("alice", "GET", "/api/v1/fs/list?path=/g.txt", nil, nil); st != 409 {
		t.Fatalf("list of a file = %d", st)
	}
	if st := x.call("alice", "DELETE", "/api/v1/fs?path=/a", nil, nil); st != 409 {
		t.Fatalf("delete non-empty = %d", st)
	}
	if st := x.call("alice", "DELETE", "/api/v1/fs?path=/a&recursive=true", nil, nil); st != 204 {
		t.Fatalf("delete recursive = %d", st)
	}
	if st := x.call("alice", "DELETE", "/api/v1/fs?path=/", nil, nil); st != 403 {
		t.Fatalf("delete root = %d", st)
	}
	if st := x.call("alice", "GET", "/api/v1/fs/stat?path="+url.QueryEscape("/../x"), nil, nil); st != 400 {
		t.Fatalf("stat .. = %d", st)
	}
	if st := x.call("alice", "PUT", "/api/v1/file/upload?path=/big", testutil.RandBytes(chunker.SmallFileLimit+1), nil); st != 413 {
		t.Fatalf("small upload over the limit = %d", st)
	}
}
