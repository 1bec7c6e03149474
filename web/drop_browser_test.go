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

// linkFixture is a daemon with alice, her folders and files, and a do()
// for her and the admin.
type linkFixture struct {
	t *testing.T
	d *testutil.Daemon
}

func newLinkFixture(t *testing.T, folders []string, files map[string][]byte) linkFixture {
	t.Helper()
	f := linkFixture{t: t, d: testutil.StartDaemon(t)}
	if st, body := f.do("POST", "/api/v1/admin/users", "admin", f.d.AdminPass, []byte(`{"name":"alice","password":"alice-pw"}`)); st != 201 {
		t.Fatalf("add alice: %d %s", st, body)
	}
	for _, p := range folders {
		if st, _ := f.do("MKCOL", "/dav"+p, "alice", "alice-pw", nil); st != 201 {
			t.Fatalf("MKCOL %s: %d", p, st)
		}
	}
	for p, b := range files {
		if st, _ := f.do("PUT", "/dav"+p, "alice", "alice-pw", b); st != 201 {
			t.Fatalf("PUT %s: %d", p, st)
		}
	}
	return f
}

func (f linkFixture) do(method, path, user, pass string, body []byte) (int, []byte) {
	f.t.Helper()
	hdr := map[string]string{}
	if strings.HasPrefix(path, "/api/") && body != nil {
		hdr["Content-Type"] = "application/json"
	}
	resp, err := f.d.Do(context.Background(), method, path, user, pass, body, hdr)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// link makes alice's link to p with permission perm and returns its URL.
func (f linkFixture) link(p, perm string) string {
	f.t.Helper()
	body, _ := json.Marshal(apitype.NewLink{Path: p, Permission: perm})
	st, b := f.do("POST", "/api/v1/links", "alice", "alice-pw", body)
	var l apitype.Link
	if st != 201 || json.Unmarshal(b, &l) != nil {
		f.t.Fatalf("link %s: %d %s", p, st, b)
	}
	return f.d.URL + l.URL
}

// owners reads alice's file p through WebDAV.
func (f linkFixture) owners(p string) []byte {
	f.t.Helper()
	st, b := f.do("GET", "/dav"+p, "alice", "alice-pw", nil)
	if st != 200 {
		f.t.Fatalf("GET %s: %d", p, st)
	}
	return b
}

// waitSent waits until this browser's list shows name sent.
func waitSent(t *testing.T, b *browsertest.Browser, name string, n int, timeout time.Duration) {
	t.Helper()
	js := `[...document.querySelectorAll('#drop-list li')].filter(li => li.dataset.name === ` + jsString(name) + ` && li.dataset.state === 'done').length >= ` + jsInt(n)
	var errText string
	b.Run(t, "wait for "+name+" sent", timeout, chromedp.Poll(js+` || [...document.querySelectorAll('#drop-list li[data-state=error]')].length > 0`, nil, chromedp.WithPollingTimeout(timeout)),
		chromedp.Evaluate(`[...document.querySelectorAll('#drop-list li[data-state=error]')].map(li => li.dataset.name + ': ' + li.textContent).join('; ')`, &errText))
	if errText != "" {
		t.Fatalf("an upload failed in the page: %s", errText)
	}
}

func jsString(s string) string { b, _ := json.Marshal(s); return string(b) }
func jsInt(n int) string       { b, _ := json.Marshal(n); return string(b) }

// TestBrowserFileDrop: an upload-only link's page in a browser without an
// account shows an upload area and nothing of the folder; a 20 MiB file
// chosen there reaches the owner byte for byte through the upload Worker
// (every chunk sent); the same name again is renamed, never replacing; an
// <img onerror> name is shown as text and runs nothing; after a reload the
// page lists what this browser sent, and only that. Layout at 400 and
// 1400 px, with screenshots.
func TestBrowserFileDrop(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	f := newLinkFixture(t, []string{"/inbox"}, map[string][]byte{"/inbox/private-plans.txt": []byte("not for the droppers")})
	url := f.link("/inbox", apitype.LinkUpload)
	shots := shooter{t: t, b: b, dir: os.Getenv("NETDISK_SCREENSHOTS")}
	tmp := t.TempDir()
	big := randomBytes(27, 20<<20)
	bigPath := writeFile(t, tmp, "holiday.mov", big)
	xss := `<img src=x onerror=window.__xss=1>.txt`
	xssPath := writeFile(t, tmp, xss, []byte("a strange name"))
	note1 := writeFile(t, tmp, "note.txt", []byte("first note"))

	var page string
	b.Run(t, "the drop page", 20*time.Second, chromedp.Navigate(url), chromedp.WaitVisible(`#drop[data-ready="1"]`, chromedp.ByQuery),
		chromedp.Text("body", &page, chromedp.ByQuery))
	if strings.Contains(page, "private-plans") {
		t.Fatalf("the drop page shows the folder: %q", page)
	}
	fitsAt(t, b, 400, "#drop-zone, label.btn", "#none")
	shots.both("public-drop-empty")
	b.Run(t, "choose the 20 MiB file", 20*time.Second, chromedp.SetUploadFiles("#drop-pick", []string{bigPath}, chromedp.ByQuery))
	waitSent(t, b, "holiday.mov", 1, 3*time.Minute)
	if got := f.owners("/inbox/holiday.mov"); !bytes.Equal(got, big) {
		t.Fatalf("the owner reads %d bytes, not the 20 MiB sent", len(got))
	}
	b.Run(t, "choose two more", 20*time.Second, chromedp.SetUploadFiles("#drop-pick", []string{note1, xssPath}, chromedp.ByQuery))
	waitSent(t, b, "note.txt", 1, time.Minute)
	waitSent(t, b, xss, 1, time.Minute)
	if err := os.WriteFile(note1, []byte("second note, same name"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Run(t, "the same name again", 20*time.Second, chromedp.SetUploadFiles("#drop-pick", []string{note1}, chromedp.ByQuery))
	waitSent(t, b, "note.txt", 2, time.Minute)
	if got := string(f.owners("/inbox/note.txt")); got != "first note" {
		t.Fatalf("note.txt was replaced: %q", got)
	}
	if got := string(f.owners("/inbox/note (2).txt")); got != "second note, same name" {
		t.Fatalf("note (2).txt: %q", got)
	}
	if got := string(f.owners("/inbox/" + xss)); got != "a strange name" {
		t.Fatalf("the HTML-named file: %q", got)
	}
	var ran bool
	var imgs int
	var names []string
	b.Run(t, "reload", 20*time.Second, chromedp.Reload(), chromedp.WaitVisible("#drop-list li", chromedp.ByQuery),
		chromedp.Evaluate(`!!window.__xss`, &ran),
		chromedp.Evaluate(`document.querySelectorAll('body img').length`, &imgs),
		chromedp.Evaluate(`[...document.querySelectorAll('#drop-list li[data-state=done]')].map(li => li.dataset.name).sort()`, &names),
		chromedp.Text("body", &page, chromedp.ByQuery))
	if ran || imgs != 0 {
		t.Fatalf("a name ran as HTML: ran %v, %d img elements", ran, imgs)
	}
	if strings.Join(names, "|") != xss+"|holiday.mov|note.txt|note.txt" || strings.Contains(page, "private-plans") || strings.Contains(page, "(2)") {
		t.Fatalf("after a reload the page lists %q: %q", names, page)
	}
	fitsAt(t, b, 400, "#drop-zone, label.btn, .up-name", ".up-name")
	fitsAt(t, b, 1400, "#drop-zone, label.btn, .up-name", ".up-name")
	shots.both("public-drop")
}

// TestBrowserLinkReadWrite: a read-write link's folder page uploads into
// the folder shown (a subfolder here) through the same Worker, renames and
// deletes files in place (the delete to the owner's trash), and shows the
// result in its listing.
func TestBrowserLinkReadWrite(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	f := newLinkFixture(t, []string{"/team", "/team/specs"}, map[string][]byte{
		"/team/specs/draft.txt": []byte("draft"), "/team/specs/old.txt": []byte("old"), "/team/readme.txt": []byte("hi")})
	url := f.link("/team", apitype.LinkReadWrite)
	shots := shooter{t: t, b: b, dir: os.Getenv("NETDISK_SCREENSHOTS")}
	data := randomBytes(5, 5<<20+77)
	p := writeFile(t, t.TempDir(), "plan.bin", data)
	b.Run(t, "the folder page", 20*time.Second, chromedp.Navigate(url), chromedp.WaitVisible(`tr[data-path="specs"]`, chromedp.ByQuery),
		chromedp.Click(`tr[data-path="specs"] a`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-path="specs/draft.txt"]`, chromedp.ByQuery), chromedp.WaitVisible(`#drop[data-ready="1"]`, chromedp.ByQuery),
		chromedp.SetUploadFiles("#drop-pick", []string{p}, chromedp.ByQuery))
	b.Run(t, "the upload is listed", 2*time.Minute, chromedp.WaitVisible(`tr[data-path="specs/plan.bin"]`, chromedp.ByQuery), chromedp.WaitVisible(`#drop[data-ready="1"]`, chromedp.ByQuery))
	if got := f.owners("/team/specs/plan.bin"); !bytes.Equal(got, data) {
		t.Fatalf("the owner reads %d bytes", len(got))
	}
	b.Run(t, "rename", 20*time.Second,
		chromedp.Click(`tr[data-path="specs/draft.txt"] button.rename`, chromedp.ByQuery),
		chromedp.WaitVisible(`form.rename input`, chromedp.ByQuery))
	fitsAt(t, b, 400, "form.rename input, form.rename button, tr:not(:has(form)) td.acts button", "#none")
	shots.both("public-rw-rename")
	b.Run(t, "save the name", 20*time.Second,
		chromedp.SetValue(`form.rename input`, "final.txt", chromedp.ByQuery),
		chromedp.Click(`form.rename button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-path="specs/final.txt"]`, chromedp.ByQuery), chromedp.WaitVisible(`#drop[data-ready="1"]`, chromedp.ByQuery))
	if got := string(f.owners("/team/specs/final.txt")); got != "draft" {
		t.Fatalf("renamed: %q", got)
	}
	b.Run(t, "delete", 20*time.Second,
		chromedp.Click(`tr[data-path="specs/old.txt"] button.delete`, chromedp.ByQuery),
		chromedp.Click(`button.confirm`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`tr[data-path="specs/old.txt"]`, chromedp.ByQuery))
	if st, _ := f.do("GET", "/dav/team/specs/old.txt", "alice", "alice-pw", nil); st != http.StatusNotFound {
		t.Fatalf("the deleted file: %d", st)
	}
	if st, trash := f.do("GET", "/api/v1/trash", "alice", "alice-pw", nil); st != 200 || !strings.Contains(string(trash), "old.txt") {
		t.Fatalf("the owner's trash: %d %s", st, trash)
	}
	fitsAt(t, b, 400, "#drop-zone, label.btn, td.acts button", "#none")
	fitsAt(t, b, 1400, "#drop-zone, label.btn, td.acts button", "#none")
	shots.both("public-rw")
}

// TestBrowserFileDropResume: a drop upload interrupted by reloading the
// page is listed as interrupted and resumes when the same file is chosen
// again (the session found by the id the page kept): only the chunks the
// server lacks are sent. Past the owner's quota, the page says so in one
// line and nothing is written.
func TestBrowserFileDropResume(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	f := linkFixture{t: t, d: testutil.StartDaemon(t, "--chunk-size", "64KiB")}
	if st, body := f.do("POST", "/api/v1/admin/users", "admin", f.d.AdminPass, []byte(`{"name":"alice","password":"alice-pw"}`)); st != 201 {
		t.Fatalf("add alice: %d %s", st, body)
	}
	if st, _ := f.do("MKCOL", "/dav/inbox", "alice", "alice-pw", nil); st != 201 {
		t.Fatalf("MKCOL: %d", st)
	}
	p := browsertest.NewProxy(t, f.d.URL)
	url := p.URL + strings.TrimPrefix(f.link("/inbox", apitype.LinkUpload), f.d.URL)
	const n = 20
	data := randomBytes(9, n*chunk)
	file := writeFile(t, t.TempDir(), "scan.pdf", data)

	p.Hold(4) // the daemon gets 4 chunks, the rest wait
	b.Run(t, "the drop page", 20*time.Second, chromedp.Navigate(url), chromedp.WaitVisible(`#drop[data-ready="1"]`, chromedp.ByQuery),
		chromedp.SetUploadFiles("#drop-pick", []string{file}, chromedp.ByQuery))
	p.WaitChunksOK(t, 4, 60*time.Second)
	before := p.Bytes()
	b.Run(t, "reload", 20*time.Second, chromedp.Reload(),
		chromedp.WaitVisible(`#drop-list li[data-name="scan.pdf"][data-state="interrupted"]`, chromedp.ByQuery), chromedp.WaitVisible(`#drop[data-ready="1"]`, chromedp.ByQuery))
	p.Release()
	b.Run(t, "choose the same file again", 20*time.Second, chromedp.SetUploadFiles("#drop-pick", []string{file}, chromedp.ByQuery))
	waitSent(t, b, "scan.pdf", 1, time.Minute)
	// The 4 chunks let through are not sent again (of the 3 held when the
	// page went, some may still have reached the daemon).
	if after := p.Bytes() - before; after > int64((n-4)*chunk) || after < int64((n-4-3)*chunk) {
		t.Fatalf("the daemon received %d bytes after the reload, want the %d missing chunks at most (%d)", after, n-4, (n-4)*chunk)
	}
	if got := f.owners("/inbox/scan.pdf"); !bytes.Equal(got, data) {
		t.Fatalf("the resumed file: %d bytes, equal %v", len(got), bytes.Equal(got, data))
	}
	var interrupted int
	b.Run(t, "no longer interrupted", 10*time.Second, chromedp.Reload(), chromedp.WaitVisible(`#drop[data-ready="1"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('#drop-list li[data-state=interrupted]').length`, &interrupted))
	if interrupted != 0 {
		t.Fatalf("%d rows still interrupted after the upload finished", interrupted)
	}

	if st, body := f.do("PUT", "/api/v1/admin/users/alice/quota", "admin", f.d.AdminPass, []byte(`{"quota":2000000}`)); st >= 300 {
		t.Fatalf("set the quota: %d %s", st, body)
	}
	big := writeFile(t, t.TempDir(), "too-big.bin", randomBytes(10, 2<<20))
	var msg string
	b.Run(t, "past the quota", 30*time.Second, chromedp.SetUploadFiles("#drop-pick", []string{big}, chromedp.ByQuery),
		chromedp.WaitVisible(`#drop-list li[data-name="too-big.bin"][data-state="error"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#drop-msg", chromedp.ByQuery),
		chromedp.Text("#drop-msg", &msg, chromedp.ByQuery))
	if msg != "Not enough space: the folder's owner has no room left for this file." {
		t.Fatalf("the page's quota message: %q", msg)
	}
	if st, _ := f.do("GET", "/dav/inbox/too-big.bin", "alice", "alice-pw", nil); st != http.StatusNotFound {
		t.Fatalf("the refused file: %d", st)
	}
	shots := shooter{t: t, b: b, dir: os.Getenv("NETDISK_SCREENSHOTS")}
	fitsAt(t, b, 400, "#drop-zone, label.btn, .up-name, #drop-msg", ".up-name")
	shots.both("public-drop-quota")
}
