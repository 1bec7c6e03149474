package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"netdisk/apitype"
	"netdisk/testutil"
	"netdisk/web/browsertest"
)

// TestBrowserShareLink: the page's Share dialog makes a public link with
// the options given (here a password) and shows its URL once, with a Copy
// button; the URL opened in a browser with no account asks for the
// password, then shows the file and downloads it; a folder link shows its
// listing, and its zip downloaded by the browser is, byte for byte, the
// zip the server streams.
func TestBrowserShareLink(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t)
	ctx := context.Background()
	do := func(method, path, user, pass string, body []byte, hdr map[string]string) *http.Response {
		t.Helper()
		resp, err := d.Do(ctx, method, path, user, pass, body, hdr)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := do("POST", "/api/v1/admin/users", "admin", d.AdminPass, []byte(`{"name":"alice","password":"alice-pw"}`), nil)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("add alice: %d", resp.StatusCode)
	}
	for _, p := range []string{"/dav/trip", "/dav/trip/day 1"} {
		do("MKCOL", p, "alice", "alice-pw", nil, nil).Body.Close()
	}
	report := []byte("the report's bytes\n")
	for p, body := range map[string][]byte{"/dav/report.txt": report, "/dav/trip/notes.txt": []byte("ferry at 9"), "/dav/trip/day 1/map.bin": bytes.Repeat([]byte{7}, 5000)} {
		if r := do("PUT", p, "alice", "alice-pw", body, nil); r.StatusCode != 201 {
			t.Fatalf("PUT %s: %d", p, r.StatusCode)
		}
	}
	shots := shooter{t: t, b: b, dir: os.Getenv("NETDISK_SCREENSHOTS")}
	b.SignIn(t, d.URL, "alice", "alice-pw")
	var url, copied string
	b.Run(t, "the share dialog", 30*time.Second,
		chromedp.WaitVisible(`tr[data-path="/report.txt"]`, chromedp.ByQuery),
		selectRow("/report.txt"),
		chromedp.Click("#act-share", chromedp.ByQuery),
		chromedp.WaitVisible("#share-password", chromedp.ByQuery),
		chromedp.SetValue("#share-password", "open sesame", chromedp.ByQuery))
	shots.both("share-dialog")
	b.Run(t, "create the link", 30*time.Second,
		chromedp.Click("#dlg-ok", chromedp.ByQuery),
		chromedp.WaitVisible("#share-url", chromedp.ByQuery),
		chromedp.Value("#share-url", &url, chromedp.ByQuery),
		chromedp.Click("#share-copy", chromedp.ByQuery),
		chromedp.Poll(`document.getElementById('share-copy').textContent === 'Copied'`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Text("#share-copy", &copied, chromedp.ByQuery),
		chromedp.Click("#dlg-ok", chromedp.ByQuery))
	if !strings.HasPrefix(url, d.URL+"/s/") || copied != "Copied" {
		t.Fatalf("the dialog's URL %q, copy button %q", url, copied)
	}
	var ls apitype.LinkList
	lr := do("GET", "/api/v1/links", "alice", "alice-pw", nil, nil)
	if err := json.NewDecoder(lr.Body).Decode(&ls); err != nil || len(ls.Links) != 1 || !ls.Links[0].Password || ls.Links[0].Path != "/report.txt" {
		t.Fatalf("the links after the dialog: %+v %v", ls, err)
	}
	lr.Body.Close()

	// The public page, in a browser without the owner's session (signed
	// out first).
	var title string
	b.Run(t, "sign out", 20*time.Second, chromedp.Click("#signout", chromedp.ByQuery), chromedp.WaitVisible("#signin-form", chromedp.ByQuery))
	b.Run(t, "the password page", 20*time.Second, chromedp.Navigate(url), chromedp.WaitVisible(`input[type=password]`, chromedp.ByQuery))
	shots.both("public-password")
	b.Run(t, "unlock", 20*time.Second,
		chromedp.SetValue(`input[type=password]`, "open sesame", chromedp.ByQuery),
		chromedp.Submit(`form`, chromedp.ByQuery),
		chromedp.WaitVisible(`a.btn[download]`, chromedp.ByQuery),
		chromedp.Text("h1", &title, chromedp.ByQuery))
	if title != "report.txt" {
		t.Fatalf("the unlocked page's title %q", title)
	}
	shots.both("public-file")
	b.Run(t, "download", 20*time.Second, chromedp.Click(`a.btn[download]`, chromedp.ByQuery))
	if got := b.NextDownload(t, 30*time.Second); !bytes.Equal(got, report) {
		t.Fatalf("the download through the link: %q", got)
	}

	// A folder link: its listing, a subfolder, and the zip.
	body, _ := json.Marshal(apitype.NewLink{Path: "/trip"})
	cr := do("POST", "/api/v1/links", "alice", "alice-pw", body, nil)
	var fl apitype.Link
	if err := json.NewDecoder(cr.Body).Decode(&fl); err != nil || cr.StatusCode != 201 {
		t.Fatalf("a folder link: %d %v", cr.StatusCode, err)
	}
	cr.Body.Close()
	var listing string
	b.Run(t, "the folder page", 20*time.Second, chromedp.Navigate(d.URL+fl.URL), chromedp.WaitVisible(`table`, chromedp.ByQuery),
		chromedp.Text("table", &listing, chromedp.ByQuery))
	if !strings.Contains(listing, "day 1") || !strings.Contains(listing, "notes.txt") {
		t.Fatalf("the folder's listing: %q", listing)
	}
	shots.both("public-folder")
	b.Run(t, "the folder's zip", 20*time.Second, chromedp.Click(`a.btn[href*="/zip"]`, chromedp.ByQuery))
	got := b.NextDownload(t, 30*time.Second)
	zr := do("GET", fl.URL+"/zip", "", "", nil, nil)
	want, _ := io.ReadAll(zr.Body)
	zr.Body.Close()
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Fatalf("the zip the browser got (%d bytes) is not the server's (%d bytes)", len(got), len(want))
	}
}
