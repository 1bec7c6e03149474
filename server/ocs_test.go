package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"netdisk/testutil"
	"netdisk/web"
)

// The web page's session signs an OCS call in only with Nextcloud's
// OCS-APIRequest: true (a header no other site's page can make the browser
// send); a change needs the page's CSRF token too, and a browser's call
// from another origin is refused whatever it carries. The clients' Basic
// credentials need neither.
func TestOCSCookieNeedsAPIRequestHeader(t *testing.T) {
	d := testutil.StartDaemon(t)
	b := signIn(t, d, "admin", d.AdminPass)
	if code, _ := fetch(t, d, "MKCOL", "/dav/shared", "admin", d.AdminPass, nil); code != http.StatusCreated {
		t.Fatalf("MKCOL: %d", code)
	}
	const shares = "/ocs/v2.php/apps/files_sharing/api/v1/shares?format=json"
	call := func(method, user string, hdr map[string]string, body string) (int, http.Header, int) {
		t.Helper()
		var rd []byte
		if body != "" {
			rd = []byte(body)
		}
		pass := ""
		if user != "" {
			pass = d.AdminPass
		}
		resp, err := d.Do(context.Background(), method, shares, user, pass, rd, hdr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var env struct {
			OCS struct{ Meta struct{ StatusCode int } }
		}
		json.Unmarshal(raw, &env)
		return resp.StatusCode, resp.Header, env.OCS.Meta.StatusCode
	}
	cookie := web.CookieName + "=" + b.cookie
	form := "path=%2Fshared&shareType=3"
	formType := "application/x-www-form-urlencoded"

	st, hd, code := call("GET", "", map[string]string{"Cookie": cookie}, "")
	if st != http.StatusUnauthorized || code != http.StatusUnauthorized || hd.Get("WWW-Authenticate") != "" {
		t.Fatalf("cookie without OCS-APIRequest: %d/%d %v", st, code, hd)
	}
	if st, _, _ := call("GET", "", map[string]string{"Cookie": cookie, "OCS-APIRequest": "true"}, ""); st != http.StatusOK {
		t.Fatalf("cookie with OCS-APIRequest: %d", st)
	}
	if st, _, _ := call("POST", "", map[string]string{"Cookie": cookie, "Content-Type": formType}, form); st != http.StatusUnauthorized {
		t.Fatalf("a change by cookie without OCS-APIRequest: %d", st)
	}
	if st, _, _ := call("POST", "", map[string]string{"Cookie": cookie, "OCS-APIRequest": "true", "Content-Type": formType}, form); st != http.StatusForbidden {
		t.Fatalf("a change by cookie without the CSRF token: %d", st)
	}
	evil := map[string]string{"Cookie": cookie, "OCS-APIRequest": "true", web.CSRFHeader: b.csrf, "Content-Type": formType, "Origin": "http://evil.example"}
	if st, _, _ := call("POST", "", evil, form); st != http.StatusForbidden {
		t.Fatalf("a change from another origin: %d", st)
	}
	evil["Origin"], evil["Sec-Fetch-Site"] = "", "cross-site"
	if st, _, _ := call("POST", "", evil, form); st != http.StatusForbidden {
		t.Fatalf("a change the browser says is cross-site: %d", st)
	}
	if st, _, code := call("POST", "", map[string]string{"Cookie": cookie, "OCS-APIRequest": "true", web.CSRFHeader: b.csrf, "Content-Type": formType}, form); st != http.StatusOK || code != http.StatusOK {
		t.Fatalf("a change by the page: %d/%d", st, code)
	}
	// The clients: Basic credentials, no cookie; with or without the header.
	for _, hdr := range []map[string]string{{"Content-Type": formType}, {"Content-Type": formType, "OCS-APIRequest": "true"}} {
		if st, _, code := call("POST", "admin", hdr, form); st != http.StatusOK || code != http.StatusOK {
			t.Fatalf("a client's change (%v): %d/%d", hdr, st, code)
		}
	}
	resp, err := d.Do(context.Background(), "GET", shares, "admin", d.AdminPass, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(raw), `"share_type":3`); n != 3 {
		t.Fatalf("three links made, %d listed: %s", n, raw)
	}
}
