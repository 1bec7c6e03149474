package main

import (
	"archive/zip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptrace"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"netdisk/apitype"
	"netdisk/testutil"
)

// publicGet fetches path of d anonymously with c and reports whether the
// request went over a connection already open.
func publicGet(t *testing.T, c *http.Client, d *testutil.Daemon, path string) (int, string, http.Header, bool) {
	t.Helper()
	reused := false
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header, reused
}

var (
	nonceRe = regexp.MustCompile(`nonce="[^"]*"`)
	tokenRe = regexp.MustCompile(`/s/[A-Za-z0-9_-]{32}`)
)

// samePage reports whether two public pages are one answer: the same but
// for the style nonce (new on every answer) and the token they name.
func samePage(a, b string) bool {
	norm := func(s string) string {
		return tokenRe.ReplaceAllString(nonceRe.ReplaceAllString(s, `nonce=""`), "/s/TOKEN")
	}
	return norm(a) == norm(b)
}

func linkPath(t *testing.T, d *testutil.Daemon, out string) string {
	t.Helper()
	u := strings.TrimSpace(out)
	if !strings.HasPrefix(u, d.URL+"/s/") || strings.Count(u, "\n") != 0 {
		t.Fatalf("share link printed %q, want one URL %s/s/TOKEN", out, d.URL)
	}
	return strings.TrimPrefix(u, d.URL)
}

// TestShareLinkCLI: `netdisk share link` prints a URL whose page anyone
// can open without an account (a file: its name and a Download that
// serves its bytes as an attachment; a folder: its listing, a file in it,
// nothing outside it however the path is spelled); `share ls --json` lists
// the links with their downloads; `share rm` revokes at once: the next
// request on the very connection that just used the link is refused, with
// the answer a random token gets; a download bound ends the link.
func TestShareLinkCLI(t *testing.T) {
	d := testutil.StartDaemon(t)
	mustCLI(t, d, "admin", "user", "add", "alice", "--password", "alice-pw")
	alice := map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": "alice-pw"}
	as := func(args ...string) string {
		t.Helper()
		r := runCLI(t, d, alice, args...)
		if r.code != 0 {
			t.Fatalf("netdisk %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}
	put(t, d, "/secret.txt", "alice", "alice-pw", []byte("not shared"))
	if st := davStatus(t, d, "MKCOL", "/pub", "alice", "alice-pw", nil); st != http.StatusCreated {
		t.Fatalf("MKCOL: %d", st)
	}
	put(t, d, "/pub/a.html", "alice", "alice-pw", []byte("<script>alert(1)</script>"))
	put(t, d, "/pub/<img src=x onerror=alert(1)>.txt", "alice", "alice-pw", []byte("x"))

	c := &http.Client{}
	random := "/s/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	rst, rbody, _, _ := publicGet(t, c, d, random)
	if rst != http.StatusNotFound {
		t.Fatalf("a random token: %d", rst)
	}

	file := linkPath(t, d, as("share", "link", "/pub/a.html"))
	st, body, hd, _ := publicGet(t, c, d, file)
	if st != http.StatusOK || !strings.Contains(body, "a.html") || !strings.Contains(body, "Download") {
		t.Fatalf("the file's page: %d %s", st, body)
	}
	if csp := hd.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || hd.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("the page's headers: %v", hd)
	}
	st, body, hd, _ = publicGet(t, c, d, file+"/dl")
	if st != http.StatusOK || body != "<script>alert(1)</script>" || !strings.HasPrefix(hd.Get("Content-Disposition"), "attachment") {
		t.Fatalf("the file's download: %d %q %v", st, body, hd)
	}

	folder := linkPath(t, d, as("share", "link", "/pub", "--max-downloads", "3"))
	st, body, _, _ = publicGet(t, c, d, folder)
	if st != http.StatusOK || !strings.Contains(body, "a.html") || strings.Contains(body, "secret") {
		t.Fatalf("the folder's page: %d %s", st, body)
	}
	if strings.Contains(body, "<img src=x") || !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;.txt") {
		t.Fatalf("a name is not escaped on the page: %s", body)
	}
	for _, p := range []string{"/dl?p=../secret.txt", "/dl?p=%2e%2e/secret.txt", "/dl?p=/../secret.txt", "/dl?p=a.html/../../secret.txt",
		"?p=..", "?p=%2E%2E%2F", "/zip?p=..", "/dl?p=%2e%2e%2fsecret.txt"} {
		st, body, _, _ := publicGet(t, c, d, folder+p)
		if st != http.StatusNotFound || strings.Contains(body, "not shared") || !samePage(body, rbody) {
			t.Fatalf("%s: %d %q, want the random token's answer", p, st, body)
		}
	}
	st, body, _, _ = publicGet(t, c, d, folder+"/dl?p=a.html")
	if st != http.StatusOK || body != "<script>alert(1)</script>" {
		t.Fatalf("a file in the folder: %d %q", st, body)
	}

	var ls []apitype.Link
	if err := json.Unmarshal([]byte(as("share", "ls", "--json")), &ls); err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0].Path != "/pub/a.html" || ls[1].Path != "/pub" || ls[0].Downloads != 1 || ls[1].Downloads != 1 ||
		ls[1].MaxDownloads != 3 || ls[0].Token != "" || ls[0].LastUse == nil {
		t.Fatalf("share ls --json: %+v", ls)
	}
	if out := as("share", "ls"); !strings.Contains(out, "/pub") || !strings.Contains(out, "1/3") {
		t.Fatalf("share ls: %s", out)
	}

	// The bound: a file and the folder as a zip, then the link is gone.
	if st, _, _, _ := publicGet(t, c, d, folder+"/dl?p=a.html"); st != http.StatusOK {
		t.Fatalf("the second download: %d", st)
	}
	st, body, hd, _ = publicGet(t, c, d, folder+"/zip")
	if st != http.StatusOK || hd.Get("Content-Type") != "application/zip" {
		t.Fatalf("the folder's zip: %d %v", st, hd)
	}
	zr, err := zip.NewReader(strings.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "pub/,pub/_img src=x onerror=alert(1)_.txt,pub/a.html" {
		t.Fatalf("the zip holds %s", got)
	}
	if st, body, _, _ := publicGet(t, c, d, folder+"/dl?p=a.html"); st != http.StatusNotFound || !samePage(body, rbody) {
		t.Fatalf("a download past the bound: %d %q", st, body)
	}
	if st, body, _, _ := publicGet(t, c, d, folder); st != http.StatusNotFound || !samePage(body, rbody) {
		t.Fatalf("the page of a used-up link: %d %q", st, body)
	}

	// Revocation on an open connection.
	if st, _, _, _ := publicGet(t, c, d, file); st != http.StatusOK {
		t.Fatalf("before the revocation: %d", st)
	}
	if out := as("share", "rm", "1"); !strings.Contains(out, "link 1 revoked") {
		t.Fatalf("share rm: %s", out)
	}
	st, body, _, reused := publicGet(t, c, d, file)
	if !reused {
		t.Fatal("the request after the revocation took a new connection")
	}
	if st != http.StatusNotFound || !samePage(body, rbody) {
		t.Fatalf("a revoked link: %d %q", st, body)
	}
	// Previews: a text's start shown escaped, an image from /raw (never
	// anything that could run: /raw of an HTML file is no link).
	put(t, d, "/note.txt", "alice", "alice-pw", []byte("<b>hello</b> & bye"))
	put(t, d, "/pic.png", "alice", "alice-pw", []byte("\x89PNG not really"))
	note := linkPath(t, d, as("share", "link", "/note.txt"))
	if st, body, _, _ := publicGet(t, c, d, note); st != http.StatusOK || !strings.Contains(body, "&lt;b&gt;hello&lt;/b&gt; &amp; bye") {
		t.Fatalf("a text's page: %d %s", st, body)
	}
	pic := linkPath(t, d, as("share", "link", "/pic.png"))
	if st, body, _, _ := publicGet(t, c, d, pic); st != http.StatusOK || !strings.Contains(body, `<img class="preview" src="`+pic+`/raw?p=%2F"`) {
		t.Fatalf("an image's page: %d %s", st, body)
	}
	if st, body, hd, _ := publicGet(t, c, d, pic+"/raw"); st != http.StatusOK || body != "\x89PNG not really" || hd.Get("Content-Type") != "image/png" ||
		hd.Get("Content-Disposition") != "" {
		t.Fatalf("an image's preview: %d %q %v", st, body, hd)
	}
	html := linkPath(t, d, as("share", "link", "/pub/a.html"))
	if st, body, _, _ := publicGet(t, c, d, html+"/raw"); st != http.StatusNotFound || !samePage(body, rbody) {
		t.Fatalf("/raw of an HTML file: %d %q", st, body)
	}
	failCLI(t, d, alice, 1, "no such link", "share", "rm", "1")
	failCLI(t, d, alice, 2, "--upload-only and --read-write exclude each other", "share", "link", "/pub", "--upload-only", "--read-write")
	failCLI(t, d, alice, 1, "folder", "share", "link", "/pub/a.html", "--upload-only")
}

// TestShareLinkPassword: a password link shows only its form until the
// password is given; a wrong password answers as a password for a random
// token does; the right one sets a cookie scoped to the link's path
// (HttpOnly, SameSite=Strict) that opens the page and the downloads;
// guesses are throttled per link and address.
func TestShareLinkPassword(t *testing.T) {
	d := testutil.StartDaemon(t)
	mustCLI(t, d, "admin", "user", "add", "alice", "--password", "alice-pw")
	alice := map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": "alice-pw"}
	put(t, d, "/f.txt", "alice", "alice-pw", []byte("the content"))
	r := runCLI(t, d, alice, "share", "link", "/f.txt", "--password", "open sesame", "--expire", "7d")
	if r.code != 0 {
		t.Fatalf("share link: %d %s", r.code, r.stderr)
	}
	link := linkPath(t, d, r.stdout)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	st, body, _, _ := publicGet(t, c, d, link)
	if st != http.StatusUnauthorized || !strings.Contains(body, `type="password"`) || strings.Contains(body, "f.txt") {
		t.Fatalf("a locked link's page: %d %s", st, body)
	}
	if st, _, _, _ := publicGet(t, c, d, link+"/dl"); st != http.StatusNotFound {
		t.Fatalf("a locked link's download: %d", st)
	}
	post := func(path, pw string) (int, string, *http.Response) {
		t.Helper()
		resp, err := c.PostForm(d.URL+path, url.Values{"password": {pw}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp
	}
	rst, rbody, _ := post("/s/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "x")
	if st, body, _ := post(link, "wrong"); st != rst || !samePage(body, rbody) || st != http.StatusUnauthorized {
		t.Fatalf("a wrong password: %d %q; a random token's: %d %q", st, body, rst, rbody)
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	st, _, resp := post(link, "open sesame")
	if st != http.StatusSeeOther {
		t.Fatalf("the right password: %d", st)
	}
	var ck *http.Cookie
	for _, x := range resp.Cookies() {
		ck = x
	}
	if ck == nil || ck.Path != link || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Fatalf("the unlock cookie: %+v", ck)
	}
	st, body, _, _ = publicGet(t, c, d, link)
	if st != http.StatusOK || !strings.Contains(body, "f.txt") {
		t.Fatalf("the unlocked page: %d %s", st, body)
	}
	if st, body, _, _ := publicGet(t, c, d, link+"/dl"); st != http.StatusOK || body != "the content" {
		t.Fatalf("the unlocked download: %d %q", st, body)
	}

	// Guessing: after the sign-in limit the right password waits too.
	c2 := &http.Client{CheckRedirect: c.CheckRedirect}
	c = c2
	throttled := false
	for i := 0; i < 30 && !throttled; i++ {
		st, _, _ := post(link, "guess")
		throttled = st == http.StatusTooManyRequests
	}
	if !throttled {
		t.Fatal("30 wrong passwords were never throttled")
	}
	if st, _, _ := post(link, "open sesame"); st != http.StatusTooManyRequests {
		t.Fatalf("the right password while throttled: %d", st)
	}
}

// TestShareLinkGuessing: tokens that reach nothing count as failed
// sign-ins of the address: after the limit the address is refused (429
// with Retry-After) before any look-up, for every token, a live one too.
func TestShareLinkGuessing(t *testing.T) {
	d := testutil.StartDaemon(t)
	mustCLI(t, d, "admin", "user", "add", "alice", "--password", "alice-pw")
	alice := map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": "alice-pw"}
	put(t, d, "/f.txt", "alice", "alice-pw", []byte("the content"))
	r := runCLI(t, d, alice, "share", "link", "/f.txt")
	if r.code != 0 {
		t.Fatalf("share link: %d %s", r.code, r.stderr)
	}
	link := linkPath(t, d, r.stdout)
	g := &http.Client{}
	if st, _, _, _ := publicGet(t, g, d, link); st != http.StatusOK {
		t.Fatalf("the link: %d", st)
	}
	tries := 0
	for ; tries < 30; tries++ {
		st, _, _, _ := publicGet(t, g, d, "/s/BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"+string(rune('a'+tries%26)))
		if st == http.StatusTooManyRequests {
			break
		}
		if st != http.StatusNotFound {
			t.Fatalf("guess %d: %d", tries, st)
		}
	}
	if tries == 0 || tries == 30 {
		t.Fatalf("throttled after %d guesses, want some and fewer than 30", tries)
	}
	if st, _, hd, _ := publicGet(t, g, d, link); st != http.StatusTooManyRequests || hd.Get("Retry-After") == "" {
		t.Fatalf("a live link from a locked address: %d %v", st, hd)
	}
}

// TestShareLinkWebDAV: a link is a WebDAV folder at
// /public.php/dav/files/TOKEN/ for rclone's webdav backend: a read link
// lists and copies out, and refuses every write (403); a read-write link
// takes a copy in (into the owner's tree and quota) and deletes into the
// owner's trash; no path, Destination or MOVE reaches outside the linked
// folder; a password link wants its password as the Basic password.
func TestShareLinkWebDAV(t *testing.T) {
	rclone := testutil.RequireTool(t, "rclone")
	d := testutil.StartDaemon(t)
	mustCLI(t, d, "admin", "user", "add", "alice", "--password", "alice-pw", "--quota", "1MiB")
	alice := map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": "alice-pw"}
	as := func(args ...string) string {
		t.Helper()
		r := runCLI(t, d, alice, args...)
		if r.code != 0 {
			t.Fatalf("netdisk %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}
	put(t, d, "/secret.txt", "alice", "alice-pw", []byte("not shared"))
	for _, p := range []string{"/pub", "/pub/sub"} {
		if st := davStatus(t, d, "MKCOL", p, "alice", "alice-pw", nil); st != http.StatusCreated {
			t.Fatalf("MKCOL %s: %d", p, st)
		}
	}
	put(t, d, "/pub/a.txt", "alice", "alice-pw", []byte("aaa"))
	put(t, d, "/pub/sub/b.txt", "alice", "alice-pw", []byte("bbbb"))

	run := func(token, pass string, wantOK bool, args ...string) string {
		t.Helper()
		obscured, err := exec.Command(rclone, "obscure", pass).Output()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(rclone, append(args, "--retries", "1", "--low-level-retries", "1")...)
		cmd.Env = append(os.Environ(), "RCLONE_CONFIG="+filepath.Join(t.TempDir(), "rclone.conf"),
			"RCLONE_CONFIG_PL_TYPE=webdav", "RCLONE_CONFIG_PL_VENDOR=other",
			"RCLONE_CONFIG_PL_URL="+d.URL+"/public.php/dav/files/"+token+"/",
			"RCLONE_CONFIG_PL_USER="+token, "RCLONE_CONFIG_PL_PASS="+strings.TrimSpace(string(obscured)))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if (err == nil) != wantOK {
			t.Fatalf("rclone %v: %v (want ok %v)\n%s%s", args, err, wantOK, out, stderr.String())
		}
		return string(out)
	}
	token := func(out string) string { return strings.TrimPrefix(linkPath(t, d, out), "/s/") }

	ro := token(as("share", "link", "/pub", "--password", "pw"))
	if got := run(ro, "pw", true, "lsf", "-R", "pl:"); got != "a.txt\nsub/\nsub/b.txt\n" {
		t.Fatalf("rclone lsf -R: %q", got)
	}
	run(ro, "wrong", false, "lsf", "pl:")
	out := t.TempDir()
	run(ro, "pw", true, "copy", "pl:", out)
	if b, err := os.ReadFile(filepath.Join(out, "sub", "b.txt")); err != nil || string(b) != "bbbb" {
		t.Fatalf("copied out: %q %v", b, err)
	}
	in := t.TempDir()
	if err := os.WriteFile(filepath.Join(in, "new.txt"), []byte("new bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(ro, "pw", false, "copy", in, "pl:")

	pub := func(method, token, pass, p string, hdr map[string]string) (int, string) {
		t.Helper()
		req, err := d.Request(context.Background(), method, "/public.php/dav/files/"+token+p, token, pass, nil, hdr)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.RawPath = "" // send p as written, %2e and .. included
		req.URL.Opaque = "/public.php/dav/files/" + token + p
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, m := range []string{"PUT", "DELETE", "MKCOL", "PROPPATCH", "LOCK"} {
		if st, _ := pub(m, ro, "pw", "/a.txt", nil); st != http.StatusForbidden {
			t.Fatalf("%s through a read link: %d", m, st)
		}
	}
	if st, _ := pub("MOVE", ro, "pw", "/a.txt", map[string]string{"Destination": d.URL + "/dav/stolen.txt"}); st != http.StatusForbidden {
		t.Fatalf("MOVE through a read link: %d", st)
	}

	rw := token(as("share", "link", "/pub", "--read-write"))
	run(rw, "", true, "copy", in, "pl:")
	resp, err := d.Do(context.Background(), "GET", "/dav/pub/new.txt", "alice", "alice-pw", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "new bytes" {
		t.Fatalf("the copy in, as alice sees it: %d %q", resp.StatusCode, b)
	}
	// The owner's quota (1 MiB) holds for writes through the link.
	big, err := d.Do(context.Background(), "PUT", "/public.php/dav/files/"+rw+"/big.bin", rw, "", make([]byte, 2<<20), nil)
	if err != nil {
		t.Fatal(err)
	}
	big.Body.Close()
	if big.StatusCode != http.StatusInsufficientStorage {
		t.Fatalf("2 MiB through the link into a 1 MiB quota: %d", big.StatusCode)
	}
	run(rw, "", true, "deletefile", "pl:a.txt")
	if tr := as("trash", "ls"); !strings.Contains(tr, "/pub/a.txt") {
		t.Fatalf("a delete through the link is not in alice's trash: %s", tr)
	}

	// Nothing outside the folder: paths, Destinations, the root itself.
	for _, p := range []string{"/../secret.txt", "/%2e%2e/secret.txt", "/sub/..%2f..%2fsecret.txt", "/%2e%2e%2f%2e%2e%2fsecret.txt"} {
		if st, body := pub("GET", rw, "", p, nil); strings.Contains(body, "not shared") || st == http.StatusOK {
			t.Fatalf("GET %s: %d %q", p, st, body)
		}
	}
	for _, dst := range []string{d.URL + "/dav/stolen.txt", d.URL + "/public.php/dav/files/" + rw + "/../../../../dav/stolen.txt",
		d.URL + "/public.php/dav/files/" + ro + "/stolen.txt"} {
		pub("MOVE", rw, "", "/new.txt", map[string]string{"Destination": dst})
		pub("COPY", rw, "", "/sub", map[string]string{"Destination": dst})
	}
	for _, p := range []string{"/stolen.txt", "/dav/stolen.txt", "/dav"} {
		if st := davStatus(t, d, "PROPFIND", p, "alice", "alice-pw", nil); st != http.StatusNotFound {
			t.Fatalf("%s in alice's root after MOVE/COPY out of the link: %d", p, st)
		}
	}
	if st, _ := pub("DELETE", rw, "", "/", nil); st < 400 {
		t.Fatalf("DELETE of the link's root: %d", st)
	}
	if st := davStatus(t, d, "PROPFIND", "/pub", "alice", "alice-pw", nil); st != http.StatusMultiStatus {
		t.Fatalf("the linked folder after a DELETE of the link's root: %d", st)
	}
	if st, body := pub("PROPFIND", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "", "/", map[string]string{"Depth": "1"}); st != http.StatusNotFound || strings.Contains(body, "a.txt") {
		t.Fatalf("a random token: %d %q", st, body)
	}
}
