package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"netdisk/testutil"
)

// TestLinkOfReceivedShare: a link to a share someone else made, or to
// something inside it, is refused as sharing it with a user is (only the
// owner shares: 403 permission), through the API, the OCS share API and
// the CLI alike; the owner still makes links to it.
func TestLinkOfReceivedShare(t *testing.T) {
	d := testutil.StartDaemon(t)
	for _, u := range []string{"alice", "bob", "carol"} {
		mustCLI(t, d, "admin", "user", "add", u, "--password", u+"-pw")
	}
	as := map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": "alice-pw"}
	bs := map[string]string{"NETDISK_USER": "bob", "NETDISK_PASSWORD": "bob-pw"}
	if st := davStatus(t, d, "MKCOL", "/docs", "alice", "alice-pw", nil); st != http.StatusCreated {
		t.Fatalf("MKCOL: %d", st)
	}
	put(t, d, "/docs/a.txt", "alice", "alice-pw", []byte("alpha"))
	mustCLIEnv(t, d, as, "share", "user", "/docs", "bob", "--write")

	call := func(method, path, ctype, body string) (int, string) {
		t.Helper()
		resp, err := d.Do(context.Background(), method, path, "bob", "bob-pw", []byte(body),
			map[string]string{"Content-Type": ctype, "OCS-APIRequest": "true"})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	type apiErr struct{ Error, Code string }
	jsonCall := func(path, body string) (int, apiErr) {
		t.Helper()
		st, b := call(http.MethodPost, path, "application/json", body)
		var e apiErr
		if err := json.Unmarshal([]byte(b), &e); err != nil {
			t.Fatalf("POST %s: %d %q: %v", path, st, b, err)
		}
		return st, e
	}
	type ocsMeta struct {
		Status     string `json:"status"`
		StatusCode int    `json:"statuscode"`
		Message    string `json:"message"`
	}
	ocsCall := func(version, form string) (int, ocsMeta) {
		t.Helper()
		st, b := call(http.MethodPost, "/ocs/"+version+".php/apps/files_sharing/api/v1/shares?format=json",
			"application/x-www-form-urlencoded", form)
		var env struct{ Ocs struct{ Meta ocsMeta } }
		if err := json.Unmarshal([]byte(b), &env); err != nil {
			t.Fatalf("OCS %s %s: %d %q: %v", version, form, st, b, err)
		}
		return st, env.Ocs.Meta
	}

	for _, p := range []string{"/docs", "/docs/a.txt"} {
		// The JSON API: the link refused as the user share is.
		sst, se := jsonCall("/api/v1/user-shares", `{"path":"`+p+`","user":"carol"}`)
		if sst != http.StatusForbidden || se.Code != "permission_denied" || !strings.Contains(se.Error, "only the owner shares") {
			t.Fatalf("user share of bob's received %s: %d %+v", p, sst, se)
		}
		for _, perm := range []string{"read", "read-write"} {
			if p == "/docs/a.txt" && perm == "read-write" {
				continue // a file's read-write link is Invalid whoever asks
			}
			lst, le := jsonCall("/api/v1/links", `{"path":"`+p+`","permission":"`+perm+`"}`)
			if lst != sst || le != se {
				t.Errorf("%s link of bob's received %s: %d %+v; the user share got %d %+v", perm, p, lst, le, sst, se)
			}
		}

		// The OCS share API, v2 (status in HTTP) and v1 (in the body).
		for _, v := range []string{"v2", "v1"} {
			ust, um := ocsCall(v, url.Values{"path": {p}, "shareType": {"0"}, "shareWith": {"carol"}}.Encode())
			if um.StatusCode != http.StatusForbidden || !strings.Contains(um.Message, "only the owner shares") {
				t.Fatalf("OCS %s user share of bob's received %s: %d %+v", v, p, ust, um)
			}
			lst, lm := ocsCall(v, url.Values{"path": {p}, "shareType": {"3"}}.Encode())
			if lst != ust || lm != um {
				t.Errorf("OCS %s link of bob's received %s: %d %+v; the user share got %d %+v", v, p, lst, lm, ust, um)
			}
		}

		// The CLI: the same exit and the same one line.
		ru := runCLI(t, d, bs, "share", "user", p, "carol")
		rl := runCLI(t, d, bs, "share", "link", p)
		if ru.code == 0 || !strings.Contains(ru.stderr, "only the owner shares") {
			t.Fatalf("netdisk share user %s as bob: exit %d %q", p, ru.code, ru.stderr)
		}
		if rl.code != ru.code || rl.stderr != ru.stderr || rl.stdout != "" {
			t.Errorf("netdisk share link %s as bob: exit %d %q %q; share user: exit %d %q", p, rl.code, rl.stdout, rl.stderr, ru.code, ru.stderr)
		}
	}

	// The owner's links are unchanged.
	for _, p := range []string{"/docs", "/docs/a.txt"} {
		r := runCLI(t, d, as, "share", "link", p)
		if r.code != 0 || !strings.HasPrefix(strings.TrimSpace(r.stdout), d.URL+"/s/") {
			t.Fatalf("netdisk share link %s as alice: exit %d %q %q", p, r.code, r.stdout, r.stderr)
		}
	}
}
