package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"netdisk/api"
	"netdisk/apitype"
	"netdisk/client"
	"netdisk/testutil"
)

// call sends a JSON request to the real daemon and returns status and body.
func call(t *testing.T, d *testutil.Daemon, method, path, user, pass, body string, hdr map[string]string) (int, string) {
	t.Helper()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	resp, err := d.Do(context.Background(), method, path, user, pass, b, hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); len(out) > 0 && !strings.HasPrefix(ct, "application/") {
		t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return resp.StatusCode, string(out)
}

func TestAdminEndpointsStatuses(t *testing.T) {
	d := testutil.StartDaemon(t)
	admin := func(method, path, body string) (int, string) {
		return call(t, d, method, path, "admin", d.AdminPass, body, nil)
	}
	for _, c := range []struct {
		method, path, body string
		want               int
		msg                string
	}{
		{"POST", "/api/v1/admin/users", `{"name":"bob","password":"bob-pass","quota":1000}`, 201, `"name":"bob"`},
		{"POST", "/api/v1/admin/users", `{"name":"bob","password":"x"}`, 409, `exists`},
		{"POST", "/api/v1/admin/users", `{"name":"../evil","password":"x"}`, 400, `user name`},
		{"POST", "/api/v1/admin/users", `{"name":"nopass","password":""}`, 400, `empty password`},
		{"POST", "/api/v1/admin/users", `{"name":"neg","password":"x","quota":-1}`, 400, `negative quota`},
		{"POST", "/api/v1/admin/users", `{"name":`, 400, `bad JSON`},
		{"GET", "/api/v1/admin/users/bob", ``, 200, `"quota":1000`},
		{"GET", "/api/v1/admin/users/nobody", ``, 404, `no such user \"nobody\"`},
		{"PUT", "/api/v1/admin/users/bob/quota", `{"quota":2000}`, 200, `"quota":2000`},
		{"PUT", "/api/v1/admin/users/bob/quota", `{}`, 400, `missing \"quota\"`},
		{"PUT", "/api/v1/admin/users/bob/quota", `{"quota":-5}`, 400, `negative quota`},
		{"PUT", "/api/v1/admin/users/nobody/quota", `{"quota":5}`, 404, `no such user`},
		{"PUT", "/api/v1/admin/users/bob/password", `{"password":"new-pass"}`, 204, ``},
		{"PUT", "/api/v1/admin/users/bob/password", `{"password":""}`, 400, `empty password`},
		{"PUT", "/api/v1/admin/users/nobody/password", `{"password":"p"}`, 404, `no such user`},
		{"DELETE", "/api/v1/admin/users/admin", ``, 409, `your own account`},
		{"DELETE", "/api/v1/admin/users/nobody", ``, 404, `no such user`},
		{"GET", "/api/v1/admin/stats", ``, 200, `"dedupRatio":0`},
		{"POST", "/api/v1/admin/gc", ``, 200, `"chunks":0`},
		{"POST", "/api/v1/admin/fsck", ``, 200, `"problems":[]`},
		{"GET", "/api/v1/admin/gc", ``, 405, `allowed: POST`},
		{"GET", "/api/v1/admin/nope", ``, 404, `no such API endpoint`},
		{"DELETE", "/api/v1/admin/users/bob", ``, 204, ``},
		{"GET", "/api/v1/admin/users/bob", ``, 404, ``},
	} {
		st, body := admin(c.method, c.path, c.body)
		if st != c.want || !strings.Contains(body, c.msg) {
			t.Errorf("%s %s %s: %d %s; want %d with %q", c.method, c.path, c.body, st, body, c.want, c.msg)
		}
	}
}

func TestAdminNeverShowsPasswordHashes(t *testing.T) {
	d := testutil.StartDaemon(t)
	call(t, d, "POST", "/api/v1/admin/users", "admin", d.AdminPass, `{"name":"bob","password":"bob-pass"}`, nil)
	for _, p := range []string{"/api/v1/admin/users", "/api/v1/admin/users/bob", "/api/v1/admin/users/admin"} {
		st, body := call(t, d, "GET", p, "admin", d.AdminPass, "", nil)
		if st != 200 || strings.Contains(body, "$2a$") || strings.Contains(strings.ToLower(body), "pass") {
			t.Errorf("GET %s: %d %s", p, st, body)
		}
	}
}

func TestAdminAuth(t *testing.T) {
	d := testutil.StartDaemon(t)
	call(t, d, "POST", "/api/v1/admin/users", "admin", d.AdminPass, `{"name":"carol","password":"carol-pass"}`, nil)

	// A signed-in non-admin is refused every admin call, and nothing changes.
	for _, r := range [][2]string{{"GET", "/api/v1/admin/users"}, {"POST", "/api/v1/admin/users"}, {"GET", "/api/v1/admin/users/carol"},
		{"DELETE", "/api/v1/admin/users/admin"}, {"PUT", "/api/v1/admin/users/carol/quota"}, {"PUT", "/api/v1/admin/users/admin/password"},
		{"GET", "/api/v1/admin/stats"}, {"POST", "/api/v1/admin/gc"}, {"POST", "/api/v1/admin/fsck"}} {
		st, body := call(t, d, r[0], r[1], "carol", "carol-pass", `{"name":"x","password":"y","quota":1}`, nil)
		if st != http.StatusForbidden || !strings.Contains(body, "admin rights required") {
			t.Errorf("carol %s %s: %d %s; want 403", r[0], r[1], st, body)
		}
	}
	if st, _ := call(t, d, "GET", "/api/v1/admin/users/x", "admin", d.AdminPass, "", nil); st != http.StatusNotFound {
		t.Errorf("carol's POST created x: %d", st)
	}

	// A wrong password and an unknown user get the same answer.
	st1, b1 := call(t, d, "GET", "/api/v1/admin/stats", "admin", "wrong", "", nil)
	st2, b2 := call(t, d, "GET", "/api/v1/admin/stats", "nobody", "wrong", "", nil)
	if st1 != http.StatusUnauthorized || st2 != st1 || b1 != b2 || !strings.Contains(b1, "wrong user name or password") {
		t.Errorf("wrong password: %d %s; unknown user: %d %s", st1, b1, st2, b2)
	}
	// The Go client turns it into the same one-line message the CLI prints.
	c := client.New(d.URL, "nobody", "wrong")
	if _, err := c.AdminStats(context.Background()); client.StatusOf(err) != http.StatusUnauthorized {
		t.Errorf("client: %v", err)
	}
}

func TestAdminFsckStreamsProgress(t *testing.T) {
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	data := make([]byte, 10*64<<10+7) // 11 chunks, all distinct
	for i := range data {
		data[i] = byte(i * 7 / (64 << 10))
	}
	if st, _ := call(t, d, "PUT", "/dav/big.bin", "admin", d.AdminPass, string(data), nil); st != http.StatusCreated {
		t.Fatalf("PUT: %d", st)
	}

	// Raw: progress lines, then one result line.
	st, body := call(t, d, "POST", "/api/v1/admin/fsck", "admin", d.AdminPass, "", map[string]string{"Accept": apitype.NDJSON})
	if st != 200 {
		t.Fatalf("fsck: %d %s", st, body)
	}
	var evs []apitype.FsckEvent
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		var ev apitype.FsckEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	if len(evs) < 3 {
		t.Fatalf("want progress lines then a result, got %d lines:\n%s", len(evs), body)
	}
	last := evs[len(evs)-1]
	if last.Result == nil || last.Result.Checked != 11 || len(last.Result.Problems) != 0 {
		t.Fatalf("last line: %+v", last)
	}
	if p := evs[len(evs)-2].Progress; p == nil || p.Done != 11 || p.Total != 11 {
		t.Errorf("final progress: %+v", p)
	}

	// Through the Go client.
	var calls, lastDone int64
	c := client.New(d.URL, "admin", d.AdminPass)
	res, err := c.AdminFsck(context.Background(), func(done, total int64) {
		if done < lastDone || total != 11 && done != 0 {
			t.Errorf("progress %d/%d after %d", done, total, lastDone)
		}
		calls++
		lastDone = done
	})
	if err != nil || res.Checked != 11 || calls < 2 || lastDone != 11 {
		t.Errorf("client fsck: %+v, %v; %d progress calls, last %d", res, err, calls, lastDone)
	}
}

func TestDedupRatio(t *testing.T) {
	for _, c := range []struct {
		l, p int64
		want float64
	}{{0, 0, 0}, {10, 0, 0}, {200, 100, 2}, {100, 100, 1}, {1000, 300, 3.33}} {
		if got := api.DedupRatio(c.l, c.p); got != c.want {
			t.Errorf("DedupRatio(%d, %d) = %v, want %v", c.l, c.p, got, c.want)
		}
	}
}
