package api_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/testutil"
)

// rawUpload sends PUT /api/v1/file/upload with Expect: 100-continue over a
// raw connection, so the test sees whether the server asks for the body. It
// sends the body only after a 100 Continue, and returns the final status,
// whether 100 came first, and the answer's body.
func (x *tester) rawUpload(user, path, fileHash string, body []byte) (status int, continued bool, answer []byte) {
	x.t.Helper()
	conn, err := net.Dial("tcp", x.d.Addr)
	if err != nil {
		x.t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass(user, x.d)))
	fmt.Fprintf(conn, "PUT /api/v1/file/upload?path=%s&fileHash=%s HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n"+
		"Content-Length: %d\r\nExpect: 100-continue\r\n\r\n", path, fileHash, auth, len(body))
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	if err != nil {
		x.t.Fatal(err)
	}
	if strings.HasPrefix(line, "HTTP/1.1 100") {
		continued = true
		if _, err := br.ReadString('\n'); err != nil { // the blank line ending the interim answer
			x.t.Fatal(err)
		}
		if _, err := conn.Write(body); err != nil {
			x.t.Fatal(err)
		}
		if line, err = br.ReadString('\n'); err != nil {
			x.t.Fatal(err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(strings.NewReader(line), br)), nil)
	if err != nil {
		x.t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ = io.ReadAll(resp.Body)
	return resp.StatusCode, continued, answer
}

// The one-request upload with fileHash: content the user holds is committed
// without the body being asked for; content only another user holds is read
// like new content (never revealing the other user); a body that does not
// hash to fileHash is 422 and changes nothing; a malformed fileHash is 400.
func TestSmallUploadWithFileHash(t *testing.T) {
	x := start(t)
	x.addUser("alice", 0)
	x.addUser("bob", 0)
	b := testutil.RandBytes(2*cs + 300)
	// The file hash with the content's SHA-256 name, as netdisk push sends
	// them (rawUpload puts its argument after fileHash=).
	h := fileHash(b)
	hs := h + "&fileSha256=" + fileSHA(b)

	st, cont, ans := x.rawUpload("alice", "/a.bin", hs, b)
	if st != 200 || !cont {
		t.Fatalf("new content: %d (100 Continue first: %v) %s", st, cont, ans)
	}
	var r apitype.FileResult
	json.Unmarshal(ans, &r)
	if r.FileHash != h || r.Instant {
		t.Fatalf("new content answer %s", ans)
	}
	before := x.stats()
	// The file hash alone (MD5s) does not name the bytes: they are read.
	st, cont, ans = x.rawUpload("alice", "/md5only.bin", h, b)
	r.Instant = false
	json.Unmarshal(ans, &r)
	if st != 200 || !cont || r.Instant {
		t.Fatalf("held content named by its file hash alone: %d (100 Continue first: %v) %s; want the body read", st, cont, ans)
	}
	st, cont, ans = x.rawUpload("alice", "/dir/copy.bin", hs, b)
	json.Unmarshal(ans, &r)
	if st != 200 || cont || !r.Instant || r.Size != int64(len(b)) || r.Path != "/dir/copy.bin" {
		t.Fatalf("held content: %d (100 Continue first: %v) %s; want 200 at once, instant", st, cont, ans)
	}
	if got, _ := x.get("alice", "/dir/copy.bin"); string(got) != string(b) {
		t.Fatal("the instant copy reads back wrong")
	}
	// Bob does not hold it: his upload reads the body (the answer is the
	// one for new content), and dedup stores nothing new.
	st, cont, ans = x.rawUpload("bob", "/mine.bin", hs, b)
	r.Instant = false
	json.Unmarshal(ans, &r)
	if st != 200 || !cont || r.Instant || x.stats() != before {
		t.Fatalf("bob: %d (100 Continue first: %v) %s, chunks %d → %d", st, cont, ans, before, x.stats())
	}
	// The wrong bytes for a hash: 422, nothing committed.
	other := testutil.RandBytes(500)
	if st, _, ans := x.rawUpload("bob", "/bad.bin", fileHash(b[:400]), other); st != http.StatusUnprocessableEntity {
		t.Fatalf("mismatching body: %d %s, want 422", st, ans)
	}
	if st := x.call("bob", "GET", "/api/v1/fs/stat?path=/bad.bin", nil, nil); st != 404 {
		t.Fatalf("a refused upload is visible: %d", st)
	}
	if st, _, _ := x.rawUpload("bob", "/x.bin", "XYZ", other); st != 400 {
		t.Fatalf("malformed fileHash: %d, want 400", st)
	}
}
