package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"netdisk/testutil"
	"netdisk/web/browsertest"
)

// steal is a script that, run in the drive's origin with a signed-in
// session, reads the CSRF token and creates the folder /pwned-TAG. It is
// synchronous (so it has run by the document's load event) and free of '<'
// and '&' (so it fits in SVG and XML unescaped).
const steal = `(function(){try{var x=new XMLHttpRequest();x.open('GET','/web/session',false);x.send();` +
	`var c=JSON.parse(x.responseText).csrf;var y=new XMLHttpRequest();y.open('POST','/api/v1/fs/mkdir',false);` +
	`y.setRequestHeader('Content-Type','application/json');y.setRequestHeader('X-CSRF-Token',c);` +
	`y.send(JSON.stringify({path:'/pwned-TAG'}));document.title='ran '+y.status}catch(e){document.title='failed '+e}})()`

// TestBrowserAttacks drives a real Chromium through the attacks on the
// drive's origin: files in the drive that try to run as the drive's page,
// and pages on other origins that make the browser send state changes with
// its cached Basic credentials.
func TestBrowserAttacks(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	t.Run("stored XSS", func(t *testing.T) { testStoredXSS(t, b, d) })
	t.Run("CSRF with cached Basic credentials", func(t *testing.T) { testCachedBasicCSRF(t, b, d) })
}

func testStoredXSS(t *testing.T, b *browsertest.Browser, d *testutil.Daemon) {
	files := []struct {
		name, body string
		inline     bool // a passive type: shown, not downloaded
	}{
		{"evil.html", `<html><body><script>` + steal + `</script></body></html>`, false},
		{"evil.svg", `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>` + steal + `</script></svg>`, false},
		{"evil.xhtml", `<html xmlns="http://www.w3.org/1999/xhtml"><body><script>` + steal + `</script></body></html>`, false},
		{"evil.xml", `<?xml version="1.0"?><r><h:script xmlns:h="http://www.w3.org/1999/xhtml">` + steal + `</h:script></r>`, false},
		{"evil.HTM", `<html><body><script>` + steal + `</script></body></html>`, false},
		{"evil.html.", `<html><body><script>` + steal + `</script></body></html>`, false},
		{"evil", `<html><body><script>` + steal + `</script></body></html>`, false},
		// Sniffing: HTML bytes under passive types.
		{"sniff.png", `<html><body><script>` + steal + `</script></body></html>`, true},
		{"sniff.txt", `<html><body><script>` + steal + `</script></body></html>`, true},
	}
	for _, f := range files {
		body := strings.ReplaceAll(f.body, "TAG", strings.ReplaceAll(f.name, ".", "_"))
		resp, err := d.Do(context.Background(), "PUT", "/dav/"+f.name, "admin", d.AdminPass, []byte(body), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("PUT %s: %d", f.name, resp.StatusCode)
		}
	}
	pic := pngImage(t)
	for name, data := range map[string][]byte{"pic.png": pic, "logo.svg": []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><rect width="40" height="20" fill="red"/></svg>`)} {
		resp, err := d.Do(context.Background(), "PUT", "/dav/"+name, "admin", d.AdminPass, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	b.SignIn(t, d.URL, "admin", d.AdminPass)

	for _, f := range files {
		// The victim opens the file in the signed-in browser.
		err := b.Do(30*time.Second, chromedp.Navigate(d.URL+"/dav/"+f.name))
		var title string
		if terr := b.Do(10*time.Second, chromedp.Title(&title)); terr == nil && (strings.HasPrefix(title, "ran") || strings.HasPrefix(title, "failed")) {
			t.Errorf("%s: its script ran in the drive's origin (title %q)", f.name, title)
			continue
		}
		if f.inline {
			if err != nil {
				t.Errorf("%s: a passive type should display: %v", f.name, err)
			}
			continue
		}
		// Anything else is a download, byte for byte the file.
		got := b.NextDownload(t, 60*time.Second)
		if want := strings.ReplaceAll(f.body, "TAG", strings.ReplaceAll(f.name, ".", "_")); string(got) != want {
			t.Errorf("%s: downloaded %d bytes, want the file's %d", f.name, len(got), len(want))
		}
	}
	if names := rootNames(t, d); strings.Contains(strings.Join(names, " "), "pwned") {
		t.Fatalf("a file's script changed the drive: %v", names)
	}

	// The page's own previews still work: images (SVG included) in an
	// <img>, HTML as text.
	b.Run(t, "back to the drive page", 30*time.Second, chromedp.Navigate(d.URL+"/"),
		chromedp.WaitVisible(`tr[data-path="/pic.png"]`, chromedp.ByQuery))
	for _, c := range []struct{ path string }{{"/pic.png"}, {"/logo.svg"}} {
		b.Run(t, "preview "+c.path, 30*time.Second,
			chromedp.DoubleClick(fmt.Sprintf(`tr[data-path=%q]`, c.path), chromedp.ByQuery),
			chromedp.Poll(`(() => { const i = document.querySelector('#preview-body img'); return i && i.complete && i.naturalWidth > 0; })()`, nil),
			chromedp.Click("#preview-close", chromedp.ByQuery), chromedp.WaitNotVisible("#preview", chromedp.ByQuery))
	}
	var text string
	b.Run(t, "preview evil.html as text", 30*time.Second,
		chromedp.DoubleClick(`tr[data-path="/evil.html"]`, chromedp.ByQuery),
		chromedp.Poll(`(() => { const p = document.querySelector('#preview-body pre'); return p && p.textContent.includes('<script>'); })()`, nil),
		chromedp.Text("#preview-body pre", &text, chromedp.ByQuery),
		chromedp.Click("#preview-close", chromedp.ByQuery))
	if !strings.HasPrefix(text, "<html>") {
		t.Errorf("text preview of evil.html: %.80q", text)
	}
	if names := rootNames(t, d); strings.Contains(strings.Join(names, " "), "pwned") {
		t.Fatalf("a preview ran a file's script: %v", names)
	}
}

func testCachedBasicCSRF(t *testing.T, b *browsertest.Browser, d *testutil.Daemon) {
	// The user once typed their password for /dav/ (here: in the URL):
	// the browser now holds the credentials and attaches them to requests
	// to the daemon, whoever asks.
	// Signed out of the page: only the Basic credentials remain.
	host := strings.TrimPrefix(d.URL, "http://")
	b.Run(t, "cache Basic credentials", 30*time.Second,
		network.ClearBrowserCookies(),
		chromedp.Navigate("http://admin:"+d.AdminPass+"@"+host+"/dav/"))
	var st int
	b.Run(t, "the credentials are cached", 30*time.Second, chromedp.Navigate(d.URL+"/static/app.css"),
		chromedp.Evaluate(`fetch('/api/v1/quota', {headers: {}}).then(r => r.status)`, &st, awaitPromise))
	if st != 200 {
		t.Fatalf("Basic credentials not cached by the browser: quota %d", st)
	}

	// The attacker's page: a text/plain form whose body is JSON, and
	// no-cors fetches, at the daemon's admin and file endpoints.
	attack := fmt.Sprintf(`<!doctype html><html><body>
<iframe name="sink"></iframe>
<form id="f" method="POST" enctype="text/plain" target="sink" action="%[1]s/api/v1/admin/users">
<input type="hidden" name='{"name":"mallory","admin":true,"password":"mallory' value='pw"}'>
</form>
<form id="g" method="POST" enctype="text/plain" target="sink" action="%[1]s/dav/evil.html">
<input type="hidden" name="x" value="y">
</form>
<script>
const D = %[1]q;
const opt = (body) => ({method: 'POST', mode: 'no-cors', credentials: 'include', headers: {'Content-Type': 'text/plain'}, body});
let loads = 0;
document.querySelector('iframe').onload = () => { loads++; if (loads === 1) document.getElementById('g').submit(); };
Promise.allSettled([
  fetch(D + '/api/v1/admin/users', opt(JSON.stringify({name: 'mallory2', admin: true, password: 'mallory2-pw'}))),
  fetch(D + '/api/v1/fs/mkdir', opt(JSON.stringify({path: '/csrf'}))),
  fetch(D + '/api/v1/fs/mkdir', {method: 'POST', mode: 'no-cors', credentials: 'include', body: new URLSearchParams({path: '/csrf2'})}),
  fetch(D + '/api/v1/admin/gc', {method: 'POST', mode: 'no-cors', credentials: 'include'}),
]).then(() => {
  const wait = () => loads >= 2 ? (document.title = 'done') : setTimeout(wait, 20);
  document.getElementById('f').submit();
  wait();
});
</script></body></html>`, d.URL)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, attack)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	// localhost is another site than 127.0.0.1; another port of 127.0.0.1
	// is the same site (SameSite cookies go there) but another origin.
	for _, origin := range []string{"http://localhost:" + port, "http://127.0.0.1:" + port} {
		var title string
		b.Run(t, "the attacker's page at "+origin, 60*time.Second,
			chromedp.Navigate(origin+"/"),
			chromedp.Poll(`document.title === 'done'`, nil),
			chromedp.Title(&title))
	}
	for _, u := range []string{"mallory", "mallory2"} {
		resp, err := d.Do(context.Background(), "GET", "/api/v1/admin/users/"+u, "admin", d.AdminPass, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("a cross-site page created the user %s (GET: %d)", u, resp.StatusCode)
		}
	}
	if names := rootNames(t, d); strings.Contains(strings.Join(names, " "), "csrf") {
		t.Errorf("a cross-site page created a folder: %v", names)
	}
	// The drive's own page, with the same cached credentials, still works.
	b.Run(t, "same-origin API call", 30*time.Second, chromedp.Navigate(d.URL+"/static/app.css"),
		chromedp.Evaluate(`fetch('/api/v1/fs/mkdir', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({path: '/mine'})}).then(r => r.status)`, &st, awaitPromise))
	if st != 201 {
		t.Errorf("same-origin mkdir with cached Basic credentials: %d, want 201", st)
	}
}

// rootNames lists the drive's root as admin.
func rootNames(t *testing.T, d *testutil.Daemon) []string {
	t.Helper()
	resp, err := d.Do(context.Background(), "GET", "/api/v1/fs/list?path=/", "admin", d.AdminPass, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var l struct {
		Entries []struct{ Name string } `json:"entries"`
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&l); err != nil {
		t.Fatalf("list /: %v %s", err, body)
	}
	var names []string
	for _, e := range l.Entries {
		names = append(names, e.Name)
	}
	return names
}
