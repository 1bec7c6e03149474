package api_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"netdisk/chunker"
	"netdisk/testutil"
)

const lockBody = `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>t</D:owner></D:lockinfo>`

// davLock takes a WebDAV lock on path (depth "0" or "infinity") and returns its token.
func davLock(t *testing.T, d *testutil.Daemon, user, pass, path, depth string) string {
	t.Helper()
	resp, err := d.Do(context.Background(), "LOCK", "/dav"+path, user, pass, []byte(lockBody),
		map[string]string{"Depth": depth, "Content-Type": "application/xml"})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	tok := strings.Trim(resp.Header.Get("Lock-Token"), "<>")
	if resp.StatusCode/100 != 2 || tok == "" {
		t.Fatalf("LOCK %s: %d, token %q", path, resp.StatusCode, tok)
	}
	return tok
}

func davUnlock(t *testing.T, d *testutil.Daemon, user, pass, path, tok string) {
	t.Helper()
	resp, err := d.Do(context.Background(), "UNLOCK", "/dav"+path, user, pass, nil, map[string]string{"Lock-Token": "<" + tok + ">"})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("UNLOCK %s: %d", path, resp.StatusCode)
	}
}

// TestLocksBindTheAPI: a WebDAV lock on a file refuses every JSON API write
// to it without the token with 423 and leaves the file unchanged; with the
// token (If or Lock-Token header) the same calls work; after UNLOCK they
// work without one. A depth-infinity lock on a folder refuses creating
// members in it.
func TestLocksBindTheAPI(t *testing.T) {
	d := testutil.StartDaemon(t)
	ctx := context.Background()
	const user = "admin"
	pw := d.AdminPass
	as := func(method, path, body string, hdr map[string]string) (int, string) {
		t.Helper()
		return call(t, d, method, path, user, pw, body, hdr)
	}
	content := func(p string) string {
		t.Helper()
		resp, err := d.Do(ctx, "GET", "/dav"+p, user, pw, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return "<" + resp.Status + ">"
		}
		return string(b)
	}
	put := func(p, body string) {
		t.Helper()
		if code, out := as("PUT", "/api/v1/file/upload?path="+p, body, nil); code != 200 {
			t.Fatalf("upload %s: %d %s", p, code, out)
		}
	}
	put("/f", "original")
	put("/other", "other content")

	// A session opened before the lock: its merge must be refused.
	data := "merged content"
	sum := md5.Sum([]byte(data))
	h := hex.EncodeToString(sum[:])
	fileHash := chunker.FileHash([]string{h})
	initSession := func(hdr map[string]string) (int, string) {
		return as("POST", "/api/v1/file/init", `{"path":"/f","size":14,"fileHash":"`+fileHash+`"}`, hdr)
	}
	code, out := initSession(nil)
	if code != 200 {
		t.Fatalf("init: %d %s", code, out)
	}
	var info struct {
		UploadID string `json:"uploadId"`
	}
	json.Unmarshal([]byte(out), &info)
	if code, out := as("PUT", "/api/v1/file/uploadChunk?uploadId="+info.UploadID+"&index=0&hash="+h, data, nil); code != 200 {
		t.Fatalf("uploadChunk: %d %s", code, out)
	}

	tok := davLock(t, d, user, pw, "/f", "0")
	writes := []struct {
		name, method, path, body string
	}{
		{"delete", "DELETE", "/api/v1/fs?path=/f", ``},
		{"move away", "POST", "/api/v1/fs/move", `{"from":"/f","to":"/g"}`},
		{"move onto", "POST", "/api/v1/fs/move", `{"from":"/other","to":"/f","overwrite":true}`},
		{"copy onto", "POST", "/api/v1/fs/copy", `{"from":"/other","to":"/f","overwrite":true}`},
		{"init", "POST", "/api/v1/file/init", `{"path":"/f","size":3}`},
		{"merge", "POST", "/api/v1/file/merge", `{"uploadId":"` + info.UploadID + `","fileHash":"` + fileHash + `"}`},
		{"one-request upload", "PUT", "/api/v1/file/upload?path=/f", `changed`},
		{"setattr", "POST", "/api/v1/fs/setattr", `{"path":"/f","mode":384}`},
		{"setmtime", "POST", "/api/v1/fs/setmtime", `{"path":"/f","mtime":"2001-02-03T04:05:06Z"}`},
	}
	for _, w := range writes {
		for _, hdr := range []map[string]string{nil, {"If": "(<opaquelocktoken:00000000-0000-4000-8000-000000000000>)"}} {
			if code, out := as(w.method, w.path, w.body, hdr); code != http.StatusLocked {
				t.Errorf("%s without the token (%v): %d %s, want 423", w.name, hdr, code, out)
			}
		}
	}
	if got := content("/f"); got != "original" {
		t.Fatalf("locked /f changed: %q", got)
	}
	if code, out := as("GET", "/api/v1/fs/stat?path=/f", ``, nil); code != 200 || !strings.Contains(out, `"mode":420`) || strings.Contains(out, "2001-") {
		t.Fatalf("locked /f's attributes changed: %d %s", code, out)
	}
	if code, _ := as("POST", "/api/v1/fs/move", `{"from":"/f","to":"/g"}`, map[string]string{"If": "(bad"}); code != 400 {
		t.Errorf("malformed If: %d, want 400", code)
	}

	// With the token, in either header, the lock's owner can write.
	withIf := map[string]string{"If": "(<" + tok + ">)"}
	withLT := map[string]string{"Lock-Token": "<" + tok + ">"}
	if code, out := as("POST", "/api/v1/fs/setattr", `{"path":"/f","mode":384}`, withIf); code != 200 {
		t.Errorf("setattr with If token: %d %s", code, out)
	}
	if code, out := as("PUT", "/api/v1/file/upload?path=/f", `changed`, withLT); code != 200 || content("/f") != "changed" {
		t.Errorf("upload with Lock-Token: %d %s", code, out)
	}
	if code, out := as("POST", "/api/v1/file/merge", `{"uploadId":"`+info.UploadID+`","fileHash":"`+fileHash+`"}`, withIf); code != 200 || content("/f") != data {
		t.Errorf("merge with If token: %d %s", code, out)
	}
	if code, out := as("POST", "/api/v1/fs/copy", `{"from":"/other","to":"/f","overwrite":true}`, withLT); code != 200 || content("/f") != "other content" {
		t.Errorf("copy onto with token: %d %s", code, out)
	}
	if code, out := initSession(withIf); code != 200 {
		t.Errorf("init with token: %d %s", code, out)
	}
	// The lock is the resource's: deleting it with the token ends the lock.
	if code, out := as("DELETE", "/api/v1/fs?path=/f", ``, withIf); code != 204 {
		t.Fatalf("delete with token: %d %s", code, out)
	}
	put("/f", "again") // no token needed: the lock went with the file

	// UNLOCK: everything works without a token.
	tok = davLock(t, d, user, pw, "/f", "0")
	davUnlock(t, d, user, pw, "/f", tok)
	for _, w := range []struct{ method, path, body string }{
		{"POST", "/api/v1/fs/setattr", `{"path":"/f","mode":384}`},
		{"PUT", "/api/v1/file/upload?path=/f", `after unlock`},
		{"POST", "/api/v1/fs/move", `{"from":"/f","to":"/g"}`},
		{"POST", "/api/v1/fs/copy", `{"from":"/g","to":"/f"}`},
		{"DELETE", "/api/v1/fs?path=/g", ``},
	} {
		if code, out := as(w.method, w.path, w.body, nil); code/100 != 2 {
			t.Errorf("%s %s after UNLOCK: %d %s", w.method, w.path, code, out)
		}
	}

	// A depth-infinity lock on a folder: no member can be created in it.
	if code, out := as("POST", "/api/v1/fs/mkdir", `{"path":"/dir"}`, nil); code != 201 {
		t.Fatalf("mkdir: %d %s", code, out)
	}
	dtok := davLock(t, d, user, pw, "/dir", "infinity")
	for _, w := range []struct{ method, path, body string }{
		{"PUT", "/api/v1/file/upload?path=/dir/new", `x`},
		{"POST", "/api/v1/fs/mkdir", `{"path":"/dir/sub"}`},
		{"POST", "/api/v1/fs/mkdir", `{"path":"/dir/a/b","parents":true}`},
		{"POST", "/api/v1/fs/copy", `{"from":"/other","to":"/dir/new"}`},
		{"POST", "/api/v1/file/init", `{"path":"/dir/new","size":1}`},
		{"DELETE", "/api/v1/fs?path=/dir&recursive=true", ``},
	} {
		if code, out := as(w.method, w.path, w.body, nil); code != http.StatusLocked {
			t.Errorf("%s %s in a locked folder: %d %s, want 423", w.method, w.path, code, out)
		}
	}
	if code, out := as("GET", "/api/v1/fs/list?path=/dir", ``, nil); code != 200 || strings.Contains(out, `"name"`) {
		t.Errorf("locked folder changed: %d %s", code, out)
	}
	if code, out := as("PUT", "/api/v1/file/upload?path=/dir/new", `x`, map[string]string{"If": "(<" + dtok + ">)"}); code != 200 {
		t.Errorf("create in locked folder with token: %d %s", code, out)
	}
}
