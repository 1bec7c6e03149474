package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"netdisk/api"
	"netdisk/apitype"
	"netdisk/errs"
	"netdisk/testutil"
)

// errorCode returns the code of an error body, failing when the body is not
// {"error", "code"} or the code is not one of the documented ones.
func errorCode(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error string  `json:"error"`
		Code  *string `json:"code"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" || e.Code == nil {
		t.Fatalf("not an error body with a code: %q", body)
	}
	if _, ok := errs.KindOfCode(*e.Code); !ok {
		t.Fatalf("unknown code %q in %q", *e.Code, body)
	}
	return *e.Code
}

// send is a request to the daemon with full control over credentials
// (user "" sends none) and the body (size < 0: chunked).
func (x *tester) send(user, password, method, path string, body []byte, size int64, hdr map[string]string) (*http.Response, string) {
	x.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
		if size < 0 {
			rd = io.MultiReader(rd)
		}
	}
	req, err := http.NewRequest(method, x.d.URL+path, rd)
	if err != nil {
		x.t.Fatal(err)
	}
	if body != nil {
		req.ContentLength = size
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	if method == http.MethodPost && body != nil {
		req.Header.Set("Content-Type", "application/json") // as every API client (RequireJSON); hdr may say otherwise
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		x.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// Every error the API side writes carries a known code, whoever writes it:
// authentication, throttling, the router (unknown endpoint, wrong method,
// dot segments), body reading (too large, not JSON), the upload protocol,
// file operations, admin calls and locks. Each case names the status and
// code the contract gives it.
func TestEveryErrorHasACode(t *testing.T) {
	x := start(t)
	x.addUser("pat", 4*cs)
	pw := pass("pat", x.d)
	b := testutil.RandBytes(2*cs + 10)
	in := x.init("pat", "/half.bin", int64(len(b)))
	x.put("pat", in.UploadID, b, 0)
	if st, body := x.raw("pat", "PUT", "/api/v1/file/upload?path=/d/f.txt", []byte("hello"), 5, nil); st != 200 {
		t.Fatalf("upload: %d %s", st, body)
	}
	davLock(t, x.d, "pat", pw, "/locked.txt", "0")

	type tc struct {
		name            string
		user, password  string
		method, path    string
		body            []byte
		size            int64 // of body; -1 chunked
		hdr             map[string]string
		status          int
		code            string
		header, hdrWant string // a header the answer must carry, and its value ("" any)
	}
	jsonBody := func(s string) []byte { return []byte(s) }
	big := append(jsonBody(`{"path":"/a","size":1,"fileHash":"`), bytes.Repeat([]byte("a"), api.MaxJSONBody)...)
	big = append(big, `"}`...)
	over := testutil.RandBytes(8<<20 + 1)
	cases := []tc{
		{name: "no credentials", method: "GET", path: "/api/v1/quota", status: 401, code: "unauthenticated", header: "WWW-Authenticate"},
		{name: "wrong password", user: "pat", password: "nope", method: "GET", path: "/api/v1/quota", status: 401, code: "unauthenticated", header: "WWW-Authenticate"},
		{name: "admin call by a user", user: "pat", password: pw, method: "GET", path: "/api/v1/admin/stats", status: 403, code: "permission_denied"},
		{name: "unknown endpoint", user: "pat", password: pw, method: "GET", path: "/api/v1/nope", status: 404, code: "not_found"},
		{name: "unknown endpoint, no credentials", method: "GET", path: "/api/v2/x", status: 404, code: "not_found"},
		{name: "wrong method", user: "pat", password: pw, method: "GET", path: "/api/v1/file/init", status: 405, code: "invalid", header: "Allow", hdrWant: "POST"},
		{name: "wrong method, several allowed", user: "pat", password: pw, method: "PUT", path: "/api/v1/file/session", body: []byte{}, status: 405, code: "invalid", header: "Allow", hdrWant: "GET, HEAD, DELETE"},
		{name: "dot segment", user: "pat", password: pw, method: "GET", path: "/api/v1/fs/../x", status: 400, code: "invalid"},
		{name: "JSON body over 1 MiB", user: "pat", password: pw, method: "POST", path: "/api/v1/file/init", body: big, size: int64(len(big)), status: 413, code: "too_large"},
		{name: "chunked JSON body over 1 MiB", user: "pat", password: pw, method: "POST", path: "/api/v1/fs/mkdir", body: big, size: -1, status: 413, code: "too_large"},
		{name: "bad JSON", user: "pat", password: pw, method: "POST", path: "/api/v1/file/init", body: jsonBody(`{"path":`), size: 8, status: 400, code: "invalid"},
		{name: "one-request upload over the limit", user: "admin", password: x.d.AdminPass, method: "PUT", path: "/api/v1/file/upload?path=/big", body: over, size: int64(len(over)), hdr: map[string]string{"Expect": "100-continue"}, status: 413, code: "too_large"},
		{name: "chunked one-request upload over the limit", user: "admin", password: x.d.AdminPass, method: "PUT", path: "/api/v1/file/upload?path=/big", body: over, size: -1, status: 413, code: "too_large"},
		{name: "chunk longer than the chunk size", user: "pat", password: pw, method: "PUT", path: chunkURL(in.UploadID, 1, testutil.MD5Hex(b[cs:2*cs])), body: testutil.RandBytes(cs + 1), size: -1, status: 413, code: "too_large"},
		{name: "chunk hash mismatch", user: "pat", password: pw, method: "PUT", path: chunkURL(in.UploadID, 1, testutil.MD5Hex(b[:cs])), body: b[cs : 2*cs], size: cs, status: 400, code: "invalid"},
		{name: "unknown session", user: "pat", password: pw, method: "GET", path: "/api/v1/file/session?uploadId=nope", status: 404, code: "not_found"},
		{name: "chunk index out of range", user: "pat", password: pw, method: "POST", path: "/api/v1/file/patchHash", body: jsonBody(`{"uploadId":"` + in.UploadID + `","index":9,"hash":"` + testutil.MD5Hex(nil) + `"}`), size: -1, status: 409, code: "conflict"},
		{name: "merge with chunks missing", user: "pat", password: pw, method: "POST", path: "/api/v1/file/merge", body: jsonBody(`{"uploadId":"` + in.UploadID + `","fileHash":"` + fileHash(b) + `"}`), size: -1, status: 409, code: "conflict"},
		{name: "init over quota", user: "pat", password: pw, method: "POST", path: "/api/v1/file/init", body: jsonBody(`{"path":"/huge","size":1000000}`), size: -1, status: 507, code: "quota_exceeded"},
		{name: "stat missing", user: "pat", password: pw, method: "GET", path: "/api/v1/fs/stat?path=/nope", status: 404, code: "not_found"},
		{name: "list a file", user: "pat", password: pw, method: "GET", path: "/api/v1/fs/list?path=/d/f.txt", status: 409, code: "not_a_directory"},
		{name: "chunks of a directory", user: "pat", password: pw, method: "GET", path: "/api/v1/fs/chunks?path=/d", status: 409, code: "is_a_directory"},
		{name: "mkdir existing", user: "pat", password: pw, method: "POST", path: "/api/v1/fs/mkdir", body: jsonBody(`{"path":"/d"}`), size: -1, status: 409, code: "exists"},
		{name: "mkdir without parent", user: "pat", password: pw, method: "POST", path: "/api/v1/fs/mkdir", body: jsonBody(`{"path":"/x/y"}`), size: -1, status: 409, code: "parent_missing"},
		{name: "delete a non-empty directory", user: "pat", password: pw, method: "DELETE", path: "/api/v1/fs?path=/d", status: 409, code: "not_empty"},
		{name: "delete the root", user: "pat", password: pw, method: "DELETE", path: "/api/v1/fs?path=/", status: 403, code: "permission_denied"},
		{name: "bad path", user: "pat", password: pw, method: "GET", path: "/api/v1/fs/stat?path=/a%00b", status: 400, code: "invalid"},
		{name: "write to a locked file", user: "pat", password: pw, method: "PUT", path: "/api/v1/file/upload?path=/locked.txt", body: []byte("x"), size: 1, status: 423, code: "locked"},
		{name: "malformed If header", user: "pat", password: pw, method: "DELETE", path: "/api/v1/fs?path=/d/f.txt", hdr: map[string]string{"If": "(<nope"}, status: 400, code: "invalid"},
		{name: "admin: unknown user", user: "admin", password: x.d.AdminPass, method: "GET", path: "/api/v1/admin/users/nobody", status: 404, code: "not_found"},
		{name: "admin: user exists", user: "admin", password: x.d.AdminPass, method: "POST", path: "/api/v1/admin/users", body: jsonBody(`{"name":"PAT","password":"pw-pat-2"}`), size: -1, status: 409, code: "exists"},
		{name: "admin: quota missing", user: "admin", password: x.d.AdminPass, method: "PUT", path: "/api/v1/admin/users/pat/quota", body: jsonBody(`{}`), size: 2, status: 400, code: "invalid"},
	}
	for _, c := range cases {
		resp, body := x.send(c.user, c.password, c.method, c.path, c.body, c.size, c.hdr)
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, body, c.status)
			continue
		}
		if got := errorCode(t, body); got != c.code {
			t.Errorf("%s: code %q, want %q (%s)", c.name, got, c.code, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", c.name, ct)
		}
		if c.header != "" {
			if v := resp.Header.Get(c.header); v == "" || (c.hdrWant != "" && v != c.hdrWant) {
				t.Errorf("%s: %s header %q, want %q", c.name, c.header, v, c.hdrWant)
			}
		}
	}
	// merge's 409 lists the missing chunks beside the code.
	_, body := x.send("pat", pw, "POST", "/api/v1/file/merge", []byte(`{"uploadId":"`+in.UploadID+`","fileHash":"`+fileHash(b)+`"}`), -1, nil)
	var miss apitype.Error
	if json.Unmarshal([]byte(body), &miss) != nil || miss.Code != "conflict" || len(miss.Missing) != 2 {
		t.Errorf("merge with 2 chunks missing: %s", body)
	}

	// Throttling: after 5 failures of one name from one address the next
	// attempt is 429 with Retry-After, even with the right password.
	x.addUser("tom", 0)
	for i := 0; i < 5; i++ {
		if resp, body := x.send("tom", "wrong", "GET", "/api/v1/quota", nil, 0, nil); resp.StatusCode != 401 {
			t.Fatalf("failure %d: %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body := x.send("tom", pass("tom", x.d), "GET", "/api/v1/quota", nil, 0, nil)
	if resp.StatusCode != 429 || errorCode(t, body) != "throttled" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("throttled sign-in: %d %s (Retry-After %q), want 429 throttled", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
}

// Every route of the API refuses a request without credentials (401) and,
// for admin routes, one by a user (403) with a coded body; the route list is
// the API's own, so a route added later is walked too.
func TestEveryRouteRefusesWithACode(t *testing.T) {
	x := start(t)
	x.addUser("ula", 0)
	for _, rt := range api.New(nil, nil).Routes() {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		path = strings.ReplaceAll(path, "{name}", "ula")
		var body []byte
		if method == "POST" || method == "PUT" {
			body = []byte("{}")
		}
		if rt.Public {
			continue
		}
		resp, b := x.send("", "", method, path, body, int64(len(body)), nil)
		if resp.StatusCode != 401 || errorCode(t, b) != "unauthenticated" {
			t.Errorf("%s without credentials: %d %s", rt.Pattern, resp.StatusCode, b)
		}
		if rt.Admin {
			resp, b := x.send("ula", pass("ula", x.d), method, path, body, int64(len(body)), nil)
			if resp.StatusCode != 403 || errorCode(t, b) != "permission_denied" {
				t.Errorf("%s as a user: %d %s", rt.Pattern, resp.StatusCode, b)
			}
		}
	}
}

// A one-request upload of unknown length (chunked) keeps the kind of the
// drive's refusal: over quota is 507 quota_exceeded, not bad input.
func TestSmallUploadChunkedOverQuota(t *testing.T) {
	withLedgers(t, func(t *testing.T, x *tester, _ *testutil.Redis) {
		x.addUser("olga", cs)
		st, body := x.raw("olga", "PUT", "/api/v1/file/upload?path=/big.bin", testutil.RandBytes(3*cs), -1, nil)
		if st != 507 || errorCode(t, body) != "quota_exceeded" {
			t.Fatalf("chunked upload of 3 chunks under a 1-chunk quota: %d %s, want 507 quota_exceeded", st, body)
		}
		if st, _ := x.raw("olga", "GET", "/dav/big.bin", nil, 0, nil); st != 404 {
			t.Fatalf("the refused upload left a file: %d", st)
		}
	})
}

// With the Redis ledger down (redis-server killed) a one-request upload,
// chunked or not, is 503 unavailable (retry later), not bad input.
func TestSmallUploadLedgerDown(t *testing.T) {
	r := testutil.StartRedis(t)
	x := start(t, "--redis", r.URL)
	x.addUser("uma", 100*cs)
	r.Kill()
	for _, size := range []int64{-1, 2 * cs} {
		st, body := x.raw("uma", "PUT", "/api/v1/file/upload?path=/a.bin", testutil.RandBytes(2*cs), size, nil)
		if st != 503 || errorCode(t, body) != "unavailable" {
			t.Fatalf("upload (size %d) with Redis down: %d %s, want 503 unavailable", size, st, body)
		}
	}
}
