package server_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"netdisk/apitype"
	"netdisk/testutil"
)

// linkRig is a real daemon with chunks of 64 KiB, alice's folders, and an
// anonymous browser-like client (its own cookie jar) for her links.
type linkRig struct {
	t *testing.T
	d *testutil.Daemon
	c *http.Client
}

const rigChunk = 64 << 10

func newLinkRig(t *testing.T, extra ...string) *linkRig {
	t.Helper()
	d := testutil.StartDaemon(t, append([]string{"--chunk-size", "64KiB"}, extra...)...)
	jar, _ := cookiejar.New(nil)
	x := &linkRig{t: t, d: d, c: &http.Client{Jar: jar}}
	for _, u := range []string{`{"name":"alice","password":"alice-pw","quota":1048576}`, `{"name":"bob","password":"bob-pw"}`} {
		if st, body := x.as("admin", d.AdminPass, "POST", "/api/v1/admin/users", []byte(u)); st != http.StatusCreated {
			t.Fatalf("add user: %d %s", st, body)
		}
	}
	for _, p := range []string{"/drop", "/other", "/team", "/team/sub"} {
		x.dav("alice", "MKCOL", p, nil, http.StatusCreated)
	}
	x.dav("alice", "PUT", "/secret.txt", []byte("alice's secret"), http.StatusCreated)
	x.dav("alice", "PUT", "/drop/a.txt", []byte("alice's a.txt"), http.StatusCreated)
	return x
}

func (x *linkRig) as(user, pass, method, path string, body []byte) (int, string) {
	x.t.Helper()
	hdr := map[string]string{}
	if body != nil {
		hdr["Content-Type"] = "application/json"
	}
	resp, err := x.d.Do(context.Background(), method, path, user, pass, body, hdr)
	if err != nil {
		x.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (x *linkRig) dav(user, method, p string, body []byte, want int) string {
	x.t.Helper()
	resp, err := x.d.Do(context.Background(), method, "/dav"+(&url.URL{Path: p}).EscapedPath(), user, user+"-pw", body, nil)
	if err != nil {
		x.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		x.t.Fatalf("%s %s as %s: %d %s, want %d", method, p, user, resp.StatusCode, b, want)
	}
	return string(b)
}

// link makes alice's link to p with permission perm (and password pass)
// and returns its /s/TOKEN and id.
func (x *linkRig) link(p, perm, pass string) (string, int64) {
	x.t.Helper()
	b, _ := json.Marshal(apitype.NewLink{Path: p, Permission: perm, Password: pass})
	st, body := x.as("alice", "alice-pw", "POST", "/api/v1/links", b)
	var l apitype.Link
	if st != http.StatusCreated && st != http.StatusOK || json.Unmarshal([]byte(body), &l) != nil || l.Token == "" {
		x.t.Fatalf("make link: %d %s", st, body)
	}
	return "/s/" + l.Token, l.ID
}

// call sends an anonymous request to the daemon as the link page's Worker
// does (same origin, JSON bodies).
func (x *linkRig) call(method, path string, body any, hdr ...string) (int, string) {
	x.t.Helper()
	var rd io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case []byte:
		rd, ct = bytes.NewReader(b), "application/octet-stream"
	default:
		j, _ := json.Marshal(b)
		rd, ct = bytes.NewReader(j), "application/json"
	}
	req, err := http.NewRequest(method, x.d.URL+path, rd)
	if err != nil {
		x.t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := x.c.Do(req)
	if err != nil {
		x.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func md5hex(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }

// fileHashOf is the protocol's file hash of b in the rig's chunks.
func fileHashOf(b []byte) string {
	var hs string
	for off := 0; off < len(b); off += rigChunk {
		hs += md5hex(b[off:min(off+rigChunk, len(b))])
	}
	return md5hex([]byte(hs))
}

// step is one request of an upload and its answer, the session id masked.
type step struct {
	What   string
	Status int
	Body   string
}

var idRe = regexp.MustCompile(`[0-9a-f]{32}`)

// upload sends b as name through link (dir for read-write links): init,
// every chunk, merge; it stops at the first refusal and returns every
// step, and the bytes the chunks carried.
func (x *linkRig) upload(link, dir, name string, b []byte) ([]step, int) {
	x.t.Helper()
	var steps []step
	add := func(what string, st int, body string) bool {
		steps = append(steps, step{what, st, idRe.ReplaceAllString(body, "ID")})
		return st == http.StatusOK
	}
	st, body := x.call("POST", link+"/api/init", apitype.LinkInit{Name: name, Size: int64(len(b)), Dir: dir})
	if !add("init", st, body) {
		return steps, 0
	}
	var s apitype.Session
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		x.t.Fatal(err)
	}
	sent := 0
	for i := int64(0); i < s.TotalChunks; i++ {
		c := b[i*rigChunk : min((i+1)*rigChunk, int64(len(b)))]
		st, body := x.call("PUT", fmt.Sprintf("%s/api/chunk?uploadId=%s&index=%d&hash=%s", link, s.UploadID, i, md5hex(c)), c)
		sent += len(c)
		if !add(fmt.Sprint("chunk ", i), st, body) {
			return steps, sent
		}
	}
	st, body = x.call("POST", link+"/api/merge", apitype.LinkMerge{UploadID: s.UploadID, FileHash: fileHashOf(b)})
	add("merge", st, body)
	return steps, sent
}

func done(steps []step) bool {
	return len(steps) > 0 && steps[len(steps)-1] == step{"merge", 200, steps[len(steps)-1].Body}
}

func random(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLinkDropRules: through an upload-only link a file goes into the
// shared folder and a taken name is never replaced ("a (2).txt", then
// "a (3).txt"); the link lists and serves nothing; names and folders that
// are not one plain name are refused and write nothing; a session is
// reached only through the link that made it; a read link takes nothing.
func TestLinkDropRules(t *testing.T) {
	x := newLinkRig(t)
	drop, _ := x.link("/drop", apitype.LinkUpload, "")
	one := random(t, 3*rigChunk+100)
	two := []byte("second a.txt")
	for _, b := range [][]byte{one, two} {
		if steps, _ := x.upload(drop, "", "a.txt", b); !done(steps) {
			t.Fatalf("upload a.txt: %+v", steps)
		}
	}
	if got := x.dav("alice", "GET", "/drop/a.txt", nil, 200); got != "alice's a.txt" {
		t.Fatalf("a.txt was replaced: %.40q", got)
	}
	if got := x.dav("alice", "GET", "/drop/a (2).txt", nil, 200); got != string(one) {
		t.Fatalf("a (2).txt holds %d bytes", len(got))
	}
	if got := x.dav("alice", "GET", "/drop/a (3).txt", nil, 200); got != string(two) {
		t.Fatalf("a (3).txt holds %q", got)
	}
	// An upload named like a folder of the drop goes beside it.
	x.dav("alice", "MKCOL", "/drop/photos", nil, http.StatusCreated)
	if steps, _ := x.upload(drop, "", "photos", []byte("p")); !done(steps) {
		t.Fatalf("upload photos: %+v", steps)
	}
	x.dav("alice", "GET", "/drop/photos (2)", nil, 200)

	// Nothing is listed or served, whatever is asked.
	st, page := x.call("GET", drop, nil)
	if st != 200 || strings.Contains(page, "a.txt") || strings.Contains(page, "photos") || !strings.Contains(page, `id="drop"`) {
		t.Fatalf("the drop page: %d %s", st, page)
	}
	for _, p := range []string{"?p=/", "?p=a.txt"} {
		if st, body := x.call("GET", drop+p, nil); strings.Contains(body, "a.txt") || st != 200 {
			t.Fatalf("GET %s: %d %s", p, st, body)
		}
	}
	for _, p := range []string{"/dl?p=a.txt", "/zip?p=/", "/raw?p=a.txt", "/api/session?uploadId=0"} {
		if st, body := x.call("GET", drop+p, nil); st != 404 || strings.Contains(body, "alice's") {
			t.Fatalf("GET %s: %d %s", p, st, body)
		}
	}
	token := strings.TrimPrefix(drop, "/s/")
	if st, _ := x.call("PROPFIND", "/public.php/dav/files/"+token+"/", nil, "Depth", "1"); st != http.StatusForbidden {
		t.Fatalf("PROPFIND through the drop: %d", st)
	}

	// Names: one plain name, as any path of the drive.
	for _, name := range []string{"../secret.txt", "..", ".", "", "a/b", "/abs", "sub/../../x", "x\x00y", "x\ny", "x\x7fy", strings.Repeat("n", 256)} {
		steps, sent := x.upload(drop, "", name, []byte("evil"))
		if len(steps) != 1 || steps[0].Status != http.StatusBadRequest || sent != 0 {
			t.Errorf("name %q: %+v, want 400 at init", name, steps)
		}
	}
	for _, dir := range []string{"..", "../other", "sub", "/"} {
		if steps, _ := x.upload(drop, dir, "x.txt", []byte("evil")); len(steps) != 1 || steps[0].Status != http.StatusBadRequest {
			t.Errorf("dir %q through a drop: %+v, want 400", dir, steps)
		}
	}
	x.dav("alice", "GET", "/secret.txt", nil, 200)
	if body := x.dav("alice", "PROPFIND", "/", nil, 207); strings.Contains(body, "evil") || strings.Contains(body, ">x<") {
		t.Fatalf("a refused name wrote something: %s", body)
	}
	// A name of 255 bytes is a name; with its number it still fits.
	long := strings.Repeat("é", 125) + ".txt"
	for range 2 {
		if steps, _ := x.upload(drop, "", long, []byte("l")); !done(steps) {
			t.Fatalf("a 254-byte name: %+v", steps)
		}
	}
	// An <img onerror> name is a name like any other (the page shows only
	// what its own browser sent, through textContent).
	if steps, _ := x.upload(drop, "", `<img src=x onerror=alert(1)>.txt`, []byte("x")); !done(steps) {
		t.Fatalf("an HTML name: %+v", steps)
	}
	x.dav("alice", "GET", "/drop/<img src=x onerror=alert(1)>.txt", nil, 200)

	// A session belongs to the link whose folder holds it.
	other, _ := x.link("/other", apitype.LinkUpload, "")
	st, body := x.call("POST", drop+"/api/init", apitype.LinkInit{Name: "s.bin", Size: 2 * rigChunk})
	var s apitype.Session
	if st != 200 || json.Unmarshal([]byte(body), &s) != nil {
		t.Fatalf("init: %d %s", st, body)
	}
	c := random(t, rigChunk)
	if st, _ := x.call("PUT", fmt.Sprintf("%s/api/chunk?uploadId=%s&index=0&hash=%s", other, s.UploadID, md5hex(c)), c); st != 404 {
		t.Fatalf("a drop's session through another link: %d, want 404", st)
	}
	if st, _ := x.call("GET", other+"/api/session?uploadId="+s.UploadID, nil); st != 404 {
		t.Fatalf("a drop's session read through another link: %d, want 404", st)
	}
	// Resumed by its id (a reload): the chunks held are told.
	if st, _ := x.call("PUT", fmt.Sprintf("%s/api/chunk?uploadId=%s&index=0&hash=%s", drop, s.UploadID, md5hex(c)), c); st != 200 {
		t.Fatalf("chunk: %d", st)
	}
	if st, body := x.call("GET", drop+"/api/session?uploadId="+s.UploadID, nil); st != 200 || !strings.Contains(body, `"uploaded":[0]`) {
		t.Fatalf("resume: %d %s", st, body)
	}
	if st, _ := x.call("DELETE", drop+"/api/session?uploadId="+s.UploadID, nil); st != http.StatusNoContent {
		t.Fatalf("cancel: %d", st)
	}
	// Rename and delete are a read-write link's.
	if st, _ := x.call("POST", drop+"/api/delete", apitype.LinkDelete{Path: "a.txt"}); st != http.StatusForbidden {
		t.Fatalf("delete through a drop: %d, want 403", st)
	}
	if st, _ := x.call("POST", drop+"/api/rename", apitype.LinkRename{Path: "a.txt", Name: "b.txt"}); st != http.StatusForbidden {
		t.Fatalf("rename through a drop: %d, want 403", st)
	}
	read, _ := x.link("/other", apitype.LinkRead, "")
	if steps, _ := x.upload(read, "", "r.txt", []byte("r")); len(steps) != 1 || steps[0].Status != http.StatusForbidden {
		t.Fatalf("upload through a read link: %+v, want 403", steps)
	}
	// Another site's page cannot write through the link; a POST must be JSON.
	if st, _ := x.call("POST", drop+"/api/init", apitype.LinkInit{Name: "o.txt", Size: 1}, "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"); st != http.StatusForbidden {
		t.Fatalf("a cross-site init: %d, want 403", st)
	}
	if st, _ := x.call("POST", drop+"/api/init", []byte(`{"name":"t.txt","size":1}`)); st != http.StatusBadRequest {
		t.Fatalf("a text/plain init: %d, want 400", st)
	}
}

// TestLinkDropNoOracle: content the owner or another user already holds
// is, through a link, uploaded as any other content: every chunk's bytes
// are asked for and sent, a merge before them is refused, and every answer
// is the answer unknown content gets — whatever --instant-upload says
// (here "shared", which reveals to users anything anyone holds).
func TestLinkDropNoOracle(t *testing.T) {
	x := newLinkRig(t, "--instant-upload", "shared")
	held := random(t, 3*rigChunk+7)
	x.dav("bob", "PUT", "/bob.bin", held, http.StatusCreated)
	x.dav("alice", "PUT", "/mine.bin", held, http.StatusCreated)
	unknown := random(t, len(held))
	drop, _ := x.link("/drop", apitype.LinkUpload, "")

	// A merge with nothing sent: missing every chunk, not instant.
	st, body := x.call("POST", drop+"/api/init", apitype.LinkInit{Name: "h.bin", Size: int64(len(held))})
	var s apitype.Session
	if st != 200 || json.Unmarshal([]byte(body), &s) != nil || len(s.Uploaded) != 0 {
		t.Fatalf("init: %d %s", st, body)
	}
	st, body = x.call("POST", drop+"/api/merge", apitype.LinkMerge{UploadID: s.UploadID, FileHash: fileHashOf(held)})
	if st != http.StatusConflict || !strings.Contains(body, `"missing":[0,1,2,3]`) {
		t.Fatalf("merge of held content before its bytes: %d %s", st, body)
	}
	x.call("DELETE", drop+"/api/session?uploadId="+s.UploadID, nil)
	// The answers the user-facing API has and the link has not.
	for _, p := range []string{"/api/patchHash", "/api/prove", "/api/upload"} {
		if st, _ := x.call("POST", drop+p, map[string]string{"fileHash": fileHashOf(held)}); st < 400 {
			t.Fatalf("%s through the link: %d", p, st)
		}
	}

	heldSteps, heldSent := x.upload(drop, "", "h.bin", held)
	unknownSteps, unknownSent := x.upload(drop, "", "u.bin", unknown)
	if heldSent != len(held) || unknownSent != len(unknown) {
		t.Fatalf("bytes sent: held %d of %d, unknown %d of %d", heldSent, len(held), unknownSent, len(unknown))
	}
	// The merge answers carry each file's own hash: compare all else.
	heldSteps[len(heldSteps)-1].Body = strings.Replace(heldSteps[len(heldSteps)-1].Body, fileHashOf(held), "HASH", 1)
	unknownSteps[len(unknownSteps)-1].Body = strings.Replace(unknownSteps[len(unknownSteps)-1].Body, fileHashOf(unknown), "HASH", 1)
	if fmt.Sprint(heldSteps) != fmt.Sprint(unknownSteps) || !done(heldSteps) {
		t.Fatalf("held content answered otherwise than unknown content:\n%+v\n%+v", heldSteps, unknownSteps)
	}
	if got := x.dav("alice", "GET", "/drop/h.bin", nil, 200); got != string(held) {
		t.Fatal("h.bin differs")
	}
}

// TestLinkDropQuotaRevokePassword: an upload past the owner's quota is
// 507 with a sentence that gives away none of the owner's figures; a link
// revoked mid-upload refuses the next chunk; a password link refuses every
// write without its unlock cookie and takes them with it.
func TestLinkDropQuotaRevokePassword(t *testing.T) {
	x := newLinkRig(t)
	drop, id := x.link("/drop", apitype.LinkUpload, "")
	steps, sent := x.upload(drop, "", "big.bin", random(t, 2<<20))
	if len(steps) != 1 || steps[0].Status != http.StatusInsufficientStorage || sent != 0 ||
		!strings.Contains(steps[0].Body, `"code":"quota_exceeded"`) || regexp.MustCompile(`[0-9]`).MatchString(steps[0].Body) {
		t.Fatalf("past the owner's quota: %+v", steps)
	}

	b := random(t, 3*rigChunk)
	st, body := x.call("POST", drop+"/api/init", apitype.LinkInit{Name: "r.bin", Size: int64(len(b))})
	var s apitype.Session
	if st != 200 || json.Unmarshal([]byte(body), &s) != nil {
		t.Fatalf("init: %d %s", st, body)
	}
	chunk := func(i int) int {
		c := b[i*rigChunk : (i+1)*rigChunk]
		st, _ := x.call("PUT", fmt.Sprintf("%s/api/chunk?uploadId=%s&index=%d&hash=%s", drop, s.UploadID, i, md5hex(c)), c)
		return st
	}
	if st := chunk(0); st != 200 {
		t.Fatalf("chunk 0: %d", st)
	}
	if st, body := x.as("alice", "alice-pw", "DELETE", fmt.Sprintf("/api/v1/links/%d", id), nil); st != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", st, body)
	}
	if st := chunk(1); st != 404 {
		t.Fatalf("chunk after the revocation: %d, want 404", st)
	}
	if st, _ := x.call("POST", drop+"/api/merge", apitype.LinkMerge{UploadID: s.UploadID, FileHash: fileHashOf(b)}); st != 404 {
		t.Fatalf("merge after the revocation: %d, want 404", st)
	}

	locked, _ := x.link("/drop", apitype.LinkUpload, "open sesame")
	if steps, _ := x.upload(locked, "", "p.txt", []byte("p")); len(steps) != 1 || steps[0].Status != 404 {
		t.Fatalf("a password link without its cookie: %+v, want 404", steps)
	}
	if st, _ := x.call("GET", locked, nil); st != http.StatusUnauthorized {
		t.Fatalf("the locked page: %d", st)
	}
	req, _ := http.NewRequest("POST", x.d.URL+locked, strings.NewReader("password=open+sesame"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := x.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if steps, _ := x.upload(locked, "", "p.txt", []byte("p")); !done(steps) {
		t.Fatalf("a password link with its cookie: %+v", steps)
	}
	x.dav("alice", "GET", "/drop/p.txt", nil, 200)
}

// TestLinkReadWriteWrites: a read-write link uploads into any folder
// below it, renames and deletes there (to the owner's trash), never its
// own folder, and nothing outside it however the path is spelled.
func TestLinkReadWriteWrites(t *testing.T) {
	x := newLinkRig(t)
	rw, _ := x.link("/team", apitype.LinkReadWrite, "")
	if steps, _ := x.upload(rw, "sub", "n.txt", []byte("notes")); !done(steps) {
		t.Fatalf("upload into sub: %+v", steps)
	}
	if steps, _ := x.upload(rw, "sub", "n.txt", []byte("notes 2")); !done(steps) {
		t.Fatalf("upload into sub: %+v", steps)
	}
	x.dav("alice", "GET", "/team/sub/n (2).txt", nil, 200)
	if st, body := x.call("POST", rw+"/api/rename", apitype.LinkRename{Path: "sub/n.txt", Name: "m.txt"}); st != http.StatusNoContent {
		t.Fatalf("rename: %d %s", st, body)
	}
	if got := x.dav("alice", "GET", "/team/sub/m.txt", nil, 200); got != "notes" {
		t.Fatalf("renamed: %q", got)
	}
	if st, _ := x.call("POST", rw+"/api/rename", apitype.LinkRename{Path: "sub/m.txt", Name: "n (2).txt"}); st != http.StatusConflict && st != http.StatusPreconditionFailed {
		t.Fatalf("rename onto a taken name: %d", st)
	}
	if st, body := x.call("POST", rw+"/api/delete", apitype.LinkDelete{Path: "/sub/m.txt"}); st != http.StatusNoContent {
		t.Fatalf("delete: %d %s", st, body)
	}
	x.dav("alice", "GET", "/team/sub/m.txt", nil, 404)
	if st, body := x.as("alice", "alice-pw", "GET", "/api/v1/trash", nil); st != 200 || !strings.Contains(body, "m.txt") {
		t.Fatalf("the owner's trash: %d %s", st, body)
	}
	for _, p := range []string{"", "/", ".", "sub/.."} {
		if st, _ := x.call("POST", rw+"/api/delete", apitype.LinkDelete{Path: p}); st != http.StatusForbidden && st != http.StatusBadRequest {
			t.Errorf("delete %q: %d, want 403 or 400", p, st)
		}
		if st, _ := x.call("POST", rw+"/api/rename", apitype.LinkRename{Path: p, Name: "gone"}); st != http.StatusForbidden && st != http.StatusBadRequest {
			t.Errorf("rename %q: %d, want 403 or 400", p, st)
		}
	}
	for _, p := range []string{"../secret.txt", "sub/../../secret.txt", "%2e%2e/secret.txt", "..\\secret.txt"} {
		st, _ := x.call("POST", rw+"/api/delete", apitype.LinkDelete{Path: p})
		st2, _ := x.call("POST", rw+"/api/rename", apitype.LinkRename{Path: p, Name: "x"})
		if st < 400 || st2 < 400 {
			t.Errorf("%q: delete %d, rename %d", p, st, st2)
		}
	}
	for _, name := range []string{"../../x", "a/b", "..", "x\x01"} {
		if st, _ := x.call("POST", rw+"/api/rename", apitype.LinkRename{Path: "sub/n (2).txt", Name: name}); st != http.StatusBadRequest {
			t.Errorf("rename to %q: %d, want 400", name, st)
		}
	}
	if steps, _ := x.upload(rw, "../drop", "x.txt", []byte("x")); len(steps) != 1 || steps[0].Status != http.StatusBadRequest {
		t.Fatalf("upload to ../drop: %+v", steps)
	}
	x.dav("alice", "GET", "/secret.txt", nil, 200)
	x.dav("alice", "GET", "/team/sub/n (2).txt", nil, 200)
	x.dav("alice", "PROPFIND", "/team", nil, 207)
}
