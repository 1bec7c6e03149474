package web_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"netdisk/testutil"
	"netdisk/web/browsertest"
)

// TestBrowserSearch types in the search box and sees the hits, newest
// first with their folders, pages with "More results", opens a hit's
// folder, searches by glob, shows a hostile name as text, and returns to
// the folder with Esc and with the field's clear.
func TestBrowserSearch(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t)
	shots := shooter{t: t, b: b, dir: os.Getenv("NETDISK_SCREENSHOTS")}
	ctx := context.Background()
	dav := func(method, path string, hdr map[string]string) {
		t.Helper()
		var body []byte
		if method == "PUT" {
			body = []byte("x")
		}
		resp, err := d.Do(ctx, method, "/dav"+path, "admin", d.AdminPass, body, hdr)
		if err != nil || resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %v %v", method, path, err, resp)
		}
		resp.Body.Close()
	}
	for _, dir := range []string{"/Work", "/Work/2024", "/Work/2024/Q3 reports", "/Photos"} {
		dav("MKCOL", dir, nil)
	}
	base := time.Date(2024, 6, 1, 9, 0, 0, 0, time.UTC).Unix()
	const n = 60 // more than a page (50)
	for i := range n {
		dav("PUT", fmt.Sprintf("/Work/2024/Q3%%20reports/report-%02d.pdf", i), map[string]string{"X-OC-Mtime": fmt.Sprint(base + int64(i)*3600)})
	}
	// The oldest: it shows on the second page.
	dav("PUT", "/Photos/report%20%3Cimg%20src=x%20onerror=alert(1)%3E.png", map[string]string{"X-OC-Mtime": fmt.Sprint(base - 86400)})
	dav("PUT", "/Photos/beach.jpg", nil)
	dav("PUT", "/notes.md", nil)

	b.SignIn(t, d.URL, "admin", d.AdminPass)
	var hits int
	var first, folder string
	b.Run(t, "type a term", 30*time.Second,
		chromedp.WaitVisible(`tr[data-path="/notes.md"]`, chromedp.ByQuery),
		chromedp.SendKeys("#search-q", "REPORT", chromedp.ByQuery),
		chromedp.WaitVisible(`.hit[data-path="/Work/2024/Q3 reports/report-59.pdf"]`, chromedp.ByQuery),
		chromedp.WaitNotVisible(`.table-wrap`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('#search-list .hit').length`, &hits),
		chromedp.Evaluate(`document.querySelector('#search-list .hit').dataset.path`, &first),
		chromedp.Text(`.hit[data-path="/Work/2024/Q3 reports/report-59.pdf"] .hit-dir`, &folder, chromedp.ByQuery),
		chromedp.WaitVisible("#search-more", chromedp.ByQuery),
	)
	// Newest first: the folder Q3 reports changed last (its files were
	// added now), then the files by their times.
	if hits != 50 || first != "/Work/2024/Q3 reports" || !strings.Contains(folder, "Work › 2024 › Q3 reports") {
		t.Fatalf("first page: %d hits, first %q, folder %q", hits, first, folder)
	}
	shots.both("search")
	b.Run(t, "more results", 20*time.Second,
		chromedp.Click("#search-more", chromedp.ByQuery),
		chromedp.WaitVisible(`.hit[data-path="/Work/2024/Q3 reports/report-00.pdf"]`, chromedp.ByQuery),
		chromedp.WaitNotVisible("#search-more", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('#search-list .hit').length`, &hits),
	)
	if hits != n+2 { // the files, the hostile name and the folder "Q3 reports"
		t.Fatalf("after More: %d hits, want %d", hits, n+2)
	}
	var imgs int
	var last string
	b.Run(t, "a name is text", 10*time.Second,
		chromedp.Evaluate(`document.querySelectorAll('#search-list img').length`, &imgs),
		chromedp.Evaluate(`document.querySelector('#search-list .hit:last-child .hit-name').textContent`, &last),
	)
	if imgs != 0 || last != "report <img src=x onerror=alert(1)>.png" {
		t.Fatalf("a hostile name: %d img elements, last hit %q", imgs, last)
	}
	var current string
	b.Run(t, "open a hit's folder", 20*time.Second,
		chromedp.Click(`.hit[data-path="/Work/2024/Q3 reports/report-07.pdf"] .hit-dir`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-path="/Work/2024/Q3 reports/report-07.pdf"]`, chromedp.ByQuery),
		chromedp.WaitNotVisible("#search-results", chromedp.ByQuery),
		chromedp.Text(`#crumbs button[aria-current="page"]`, &current, chromedp.ByQuery),
	)
	if current != "Q3 reports" {
		t.Fatalf("the hit's folder opened %q", current)
	}
	var value string
	b.Run(t, "glob, then Esc", 20*time.Second,
		chromedp.SendKeys("#search-q", "*.jpg", chromedp.ByQuery),
		chromedp.WaitVisible(`.hit[data-path="/Photos/beach.jpg"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('#search-list .hit').length`, &hits),
		chromedp.KeyEvent(kb.Escape),
		chromedp.WaitNotVisible("#search-results", chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-path="/Work/2024/Q3 reports/report-07.pdf"]`, chromedp.ByQuery),
		chromedp.Value("#search-q", &value, chromedp.ByQuery),
	)
	if hits != 1 || value != "" {
		t.Fatalf("glob *.jpg: %d hits; field after Esc %q", hits, value)
	}
	b.Run(t, "nothing found, then clear", 20*time.Second,
		chromedp.SendKeys("#search-q", "zzz", chromedp.ByQuery),
		chromedp.Poll(`document.getElementById('search-status').textContent.startsWith('Nothing')`, nil),
		chromedp.Evaluate(`(() => { const f = document.getElementById('search-q'); f.value = ''; f.dispatchEvent(new Event('input')); return true; })()`, nil),
		chromedp.WaitNotVisible("#search-results", chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-path="/Work/2024/Q3 reports/report-07.pdf"]`, chromedp.ByQuery),
	)
}
