package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"netdisk/apitype"
	"netdisk/testutil"
	"netdisk/web/browsertest"
)

// hostile is a file name that is markup: every list must show it as text.
const hostile = "<img src=x onerror=alert(1)>.txt"

// davPath escapes each segment of p for a /dav URL.
func davPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// davDo sends a WebDAV request as admin and fails the test unless it
// succeeds.
func davDo(t *testing.T, d *testutil.Daemon, method, path string, body []byte) {
	t.Helper()
	resp, err := d.Do(context.Background(), method, "/dav"+davPath(path), "admin", d.AdminPass, body, nil)
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %v %v", method, path, err, resp)
	}
	resp.Body.Close()
}

// apiGet decodes the JSON answer of GET path as admin into v.
func apiGet(t *testing.T, d *testutil.Daemon, path string, v any) {
	t.Helper()
	resp, err := d.Do(context.Background(), "GET", path, "admin", d.AdminPass, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func trashItems(t *testing.T, d *testutil.Daemon) []apitype.TrashItem {
	t.Helper()
	var l apitype.TrashList
	apiGet(t, d, "/api/v1/trash?limit=1000", &l)
	return l.Items
}

// wantBytes fails unless path holds data.
func wantBytes(t *testing.T, d *testutil.Daemon, path string, data []byte) {
	t.Helper()
	if code, got := davGet(t, d, davPath(path)); code != 200 || !bytes.Equal(got, data) {
		t.Fatalf("%s: %d, %d bytes, want the %d bytes it had", path, code, len(got), len(data))
	}
}

// deleteInPage selects path's row, deletes it and confirms.
func deleteInPage(t *testing.T, b *browsertest.Browser, path string) {
	t.Helper()
	var linked bool
	b.Run(t, "delete "+path, 20*time.Second,
		selectRow(path),
		chromedp.Click("#act-delete", chromedp.ByQuery),
		chromedp.WaitVisible("#dlg-ok", chromedp.ByQuery),
		chromedp.Evaluate(`!!document.querySelector('#dlg-body a[data-open-trash]')`, &linked),
		chromedp.Click("#dlg-ok", chromedp.ByQuery),
		chromedp.WaitNotPresent(`tr[data-path="`+path+`"]`, chromedp.ByQuery),
	)
	if !linked {
		t.Fatalf("the delete dialog of %s has no link to the trash", path)
	}
}

// fitsAt fails unless, at width px, the page scrolls no wider than the
// window, every element sel matches is inside it and visible, and every
// text matches keeps at least 120 px beside its buttons.
func fitsAt(t *testing.T, b *browsertest.Browser, width int64, sel, text string) {
	t.Helper()
	var bad []string
	b.Run(t, fmt.Sprintf("layout at %d px", width), 20*time.Second,
		chromedp.EmulateViewport(width, 860),
		chromedp.Evaluate(fmt.Sprintf(`(() => {
			const bad = [];
			if (document.documentElement.scrollWidth > innerWidth) bad.push('the page scrolls sideways: ' + document.documentElement.scrollWidth);
			for (const e of document.querySelectorAll(%q)) {
				const r = e.getBoundingClientRect();
				if (r.width === 0 || r.left < 0 || r.right > innerWidth) bad.push((e.getAttribute('aria-label') || e.textContent) + ' at ' + r.left + '..' + r.right);
			}
			for (const e of document.querySelectorAll(%q)) {
				const w = e.getBoundingClientRect().width;
				if (w < 120) bad.push('text squeezed to ' + w + ' px: ' + e.textContent);
			}
			return bad;
		})()`, sel, text), &bad),
		chromedp.EmulateViewport(1400, 900),
	)
	if len(bad) > 0 {
		t.Errorf("at %d px: %q", width, bad)
	}
}

// TestBrowserTrash: a file and a folder deleted in the page are in the
// Trash view (newest first, names as text, where they were); Restore brings
// them back with identical bytes, under a "(restored)" name the view shows
// when the path is taken; Delete forever and Empty trash ask and delete;
// the view pages as the API does and opens from the keyboard.
func TestBrowserTrash(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t)
	shots := shooter{t: t, b: b, dir: os.Getenv("NETDISK_SCREENSHOTS")}
	notes, a, sub, evil := randomBytes(40, 3000), randomBytes(41, 70000), randomBytes(42, 1234), []byte("markup")
	davDo(t, d, "PUT", "/notes.txt", notes)
	davDo(t, d, "MKCOL", "/Work", nil)
	davDo(t, d, "MKCOL", "/Work/sub", nil)
	davDo(t, d, "PUT", "/Work/a.bin", a)
	davDo(t, d, "PUT", "/Work/sub/b.bin", sub)
	davDo(t, d, "PUT", "/"+hostile, evil)
	davDo(t, d, "PUT", "/keep.txt", []byte("stays"))

	b.SignIn(t, d.URL, "admin", d.AdminPass)
	b.Run(t, "the listing", 20*time.Second, chromedp.WaitVisible(`tr[data-path="/Work"]`, chromedp.ByQuery))
	for _, p := range []string{"/notes.txt", "/Work", "/" + hostile} {
		deleteInPage(t, b, p)
	}
	if code, _ := davGet(t, d, "/Work/a.bin"); code != 404 {
		t.Fatalf("a deleted folder's file: %d", code)
	}

	// The delete dialog's link opens the trash (and deletes nothing).
	b.Run(t, "open the trash from the delete dialog", 20*time.Second,
		selectRow("/keep.txt"),
		chromedp.Click("#act-delete", chromedp.ByQuery),
		chromedp.WaitVisible("#dlg-body a[data-open-trash]", chromedp.ByQuery),
		chromedp.Click("#dlg-body a[data-open-trash]", chromedp.ByQuery),
		chromedp.WaitNotVisible("#dlg", chromedp.ByQuery),
		chromedp.WaitVisible(`li.trash-item[data-path="/notes.txt"]`, chromedp.ByQuery),
		chromedp.WaitNotVisible(".table-wrap", chromedp.ByQuery),
	)
	wantBytes(t, d, "/keep.txt", []byte("stays"))

	type shown struct {
		Names, Froms []string
		Imgs         int
	}
	read := func() shown {
		t.Helper()
		var s shown
		b.Run(t, "read the trash", 10*time.Second, chromedp.Evaluate(`({
			names: [...document.querySelectorAll('#trash-list .trash-name')].map(e => e.textContent),
			froms: [...document.querySelectorAll('#trash-list .trash-from')].map(e => e.textContent),
			imgs: document.querySelectorAll('#trash-view img').length})`, &s))
		return s
	}
	s := read()
	if strings.Join(s.Names, "|") != hostile+"|Work|notes.txt" || s.Imgs != 0 {
		t.Fatalf("trash shows %q with %d img elements, want [%s Work notes.txt] newest first, as text", s.Names, s.Imgs, hostile)
	}
	if s.Froms[1] != "From My drive" {
		t.Errorf("where Work was: %q", s.Froms[1])
	}
	if shots.dir != "" {
		b.Run(t, "let the toast go", 10*time.Second, chromedp.WaitNotVisible("#toast", chromedp.ByQuery))
	}
	shots.both("trash")
	for _, w := range []int64{400, 1400} {
		fitsAt(t, b, w, "#trash-back, #trash-empty, #trash-list button", "#trash-list .trash-text")
	}

	// A new notes.txt takes the path: the old one comes back beside it.
	newNotes := []byte("written after the delete")
	davDo(t, d, "PUT", "/notes.txt", newNotes)
	var msg string
	b.Run(t, "restore the folder", 20*time.Second,
		chromedp.Click(`li.trash-item[data-path="/Work"] .trash-restore`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`li.trash-item[data-path="/Work"]`, chromedp.ByQuery),
		chromedp.Text("#trash-status", &msg, chromedp.ByQuery),
	)
	if !strings.Contains(msg, "“Work” is back in My drive") {
		t.Errorf("after restoring Work the view says %q", msg)
	}
	b.Run(t, "restore the file", 20*time.Second,
		chromedp.Click(`li.trash-item[data-path="/notes.txt"] .trash-restore`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`li.trash-item[data-path="/notes.txt"]`, chromedp.ByQuery),
		chromedp.Text("#trash-status", &msg, chromedp.ByQuery),
	)
	if !strings.Contains(msg, "back as “notes (restored).txt” in My drive") {
		t.Errorf("after restoring notes.txt over a new one the view says %q, want its new name", msg)
	}
	wantBytes(t, d, "/Work/a.bin", a)
	wantBytes(t, d, "/Work/sub/b.bin", sub)
	wantBytes(t, d, "/notes (restored).txt", notes)
	wantBytes(t, d, "/notes.txt", newNotes)

	// Delete forever asks, then the item is gone for good.
	b.Run(t, "delete forever", 20*time.Second,
		chromedp.Click(`li.trash-item .trash-delete`, chromedp.ByQuery),
		chromedp.WaitVisible("#dlg-ok", chromedp.ByQuery),
		chromedp.Click("#dlg-ok", chromedp.ByQuery),
		chromedp.WaitNotPresent(`li.trash-item`, chromedp.ByQuery),
		chromedp.WaitVisible("#trash-none", chromedp.ByQuery),
	)
	if its := trashItems(t, d); len(its) != 0 {
		t.Fatalf("after Delete forever the trash holds %+v", its)
	}

	// More than a page (50): More fetches the rest; Empty trash empties.
	const n = 52
	for i := range n {
		p := fmt.Sprintf("/old-%02d.txt", i)
		davDo(t, d, "PUT", p, []byte(p))
		davDo(t, d, "DELETE", p, nil)
	}
	var rows int
	var more bool
	b.Run(t, "reopen the trash", 20*time.Second,
		chromedp.Click("#trash-back", chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-path="/notes (restored).txt"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-path="/Work"]`, chromedp.ByQuery),
		chromedp.Focus("#btn-trash", chromedp.ByQuery),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(`li.trash-item[data-path="/old-51.txt"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('#trash-list li').length`, &rows),
		chromedp.Evaluate(`!document.getElementById('trash-more').hidden`, &more),
	)
	if rows != 50 || !more {
		t.Fatalf("first page: %d rows, More shown %v; want 50 and More", rows, more)
	}
	b.Run(t, "more", 20*time.Second,
		chromedp.Click("#trash-more", chromedp.ByQuery),
		chromedp.WaitVisible(`li.trash-item[data-path="/old-00.txt"]`, chromedp.ByQuery),
		chromedp.WaitNotVisible("#trash-more", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('#trash-list li').length`, &rows),
	)
	if rows != n {
		t.Fatalf("after More: %d rows, want %d", rows, n)
	}
	b.Run(t, "empty the trash", 20*time.Second,
		chromedp.Click("#trash-empty", chromedp.ByQuery),
		chromedp.WaitVisible("#dlg-ok", chromedp.ByQuery),
		chromedp.Click("#dlg-ok", chromedp.ByQuery),
		chromedp.WaitNotPresent(`li.trash-item`, chromedp.ByQuery),
		chromedp.WaitVisible("#trash-none", chromedp.ByQuery),
	)
	if its := trashItems(t, d); len(its) != 0 {
		t.Fatalf("after Empty trash the trash holds %d items", len(its))
	}
}

// TestBrowserVersions: a file uploaded twice through the page has one
// version in its Versions panel (time, size, author); Download gives the
// version's bytes; Restore makes them the file's again and lists the newer
// content as the version. A folder offers no Versions; V on a file's row
// opens them; a name that is markup shows as text.
func TestBrowserVersions(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t)
	shots := shooter{t: t, b: b, dir: os.Getenv("NETDISK_SCREENSHOTS")}
	tmp := t.TempDir()
	v1, v2 := randomBytes(50, 2000), randomBytes(51, 3500)
	davDo(t, d, "MKCOL", "/Docs", nil)
	b.SignIn(t, d.URL, "admin", d.AdminPass)

	upload := func(dir string, data []byte) {
		t.Helper()
		f := writeFile(t, mustMkdir(t, filepath.Join(tmp, dir)), "report.txt", data)
		b.Run(t, "upload "+dir, 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{f}, chromedp.ByQuery))
		if row := b.WaitUpload(t, "/report.txt", 60*time.Second, "done", "error"); row.State != "done" {
			t.Fatalf("upload %s: %+v", dir, row)
		}
		b.Run(t, "clear the panel", 10*time.Second, chromedp.Click("#uploads-clear", chromedp.ByQuery),
			chromedp.WaitNotPresent(`li.up[data-path="/report.txt"]`, chromedp.ByQuery))
	}
	upload("first", v1)
	upload("second", v2)
	wantBytes(t, d, "/report.txt", v2)

	var hidden bool
	b.Run(t, "a folder has no Versions", 20*time.Second,
		// The listing read again after the upload (it clears the selection) shows the new size.
		chromedp.Poll(`document.querySelector('tr[data-path="/report.txt"] td.c-size')?.textContent === '3.42 KiB'`, nil),
		selectRow("/Docs"),
		chromedp.WaitVisible("#selbar", chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById('act-versions').hidden`, &hidden),
	)
	if !hidden {
		t.Fatal("a folder's selection offers Versions")
	}

	type version struct {
		Time, Meta, Hash string
	}
	read := func() []version {
		t.Helper()
		var vs []version
		b.Run(t, "read the versions", 10*time.Second, chromedp.Evaluate(`[...document.querySelectorAll('#versions-list li.version')].map(li => ({
			time: li.querySelector('.version-time').textContent, meta: li.querySelector('.version-meta').textContent, hash: li.dataset.hash}))`, &vs))
		return vs
	}
	var list apitype.VersionList
	apiGet(t, d, "/api/v1/versions?path=/report.txt", &list)
	if len(list.Versions) != 1 || list.Versions[0].Size != int64(len(v1)) {
		t.Fatalf("the API lists %+v, want one version of %d bytes", list.Versions, len(v1))
	}
	b.Run(t, "open Versions", 20*time.Second,
		selectRow("/report.txt"),
		chromedp.WaitVisible("#act-versions", chromedp.ByQuery),
		chromedp.Click("#act-versions", chromedp.ByQuery),
		chromedp.WaitVisible("#versions-list li.version", chromedp.ByQuery),
	)
	vs := read()
	if len(vs) != 1 || vs[0].Hash != list.Versions[0].FileHash || vs[0].Meta != "1.95 KiB · by admin" || vs[0].Time == "" {
		t.Fatalf("the panel shows %+v, want the one version (1.95 KiB, by admin)", vs)
	}
	shots.both("versions")
	for _, w := range []int64{400, 1400} {
		fitsAt(t, b, w, "#versions-close, #versions-list a, #versions-list button", "#versions-list .version-text")
	}

	b.Run(t, "download the version", 10*time.Second, chromedp.Click("#versions-list .version-dl", chromedp.ByQuery))
	if got := b.NextDownload(t, 30*time.Second); !bytes.Equal(got, v1) {
		t.Fatalf("the version downloaded: %d bytes, want the first upload's %d", len(got), len(v1))
	}

	var status string
	b.Run(t, "restore it", 20*time.Second,
		chromedp.Click("#versions-list .version-restore", chromedp.ByQuery),
		chromedp.Poll(`document.getElementById('versions-status').textContent.startsWith('Restored')`, nil),
		chromedp.Text("#versions-status", &status, chromedp.ByQuery),
	)
	wantBytes(t, d, "/report.txt", v1)
	apiGet(t, d, "/api/v1/versions?path=/report.txt", &list)
	if len(list.Versions) != 1 || list.Versions[0].Size != int64(len(v2)) {
		t.Fatalf("after the restore the API lists %+v, want the second upload as the version", list.Versions)
	}
	vs = read()
	if len(vs) != 1 || vs[0].Hash != list.Versions[0].FileHash || vs[0].Meta != "3.42 KiB · by admin" {
		t.Fatalf("after the restore the panel shows %+v, want the newer content (3.42 KiB) as the version", vs)
	}
	b.Run(t, "download the newer", 10*time.Second, chromedp.Click("#versions-list .version-dl", chromedp.ByQuery))
	if got := b.NextDownload(t, 30*time.Second); !bytes.Equal(got, v2) {
		t.Fatalf("the version after the restore: %d bytes, want the second upload's %d", len(got), len(v2))
	}

	// A name that is markup, in the panel's title.
	davDo(t, d, "PUT", "/"+hostile, []byte("one"))
	davDo(t, d, "PUT", "/"+hostile, []byte("two"))
	var title string
	var imgs, n int
	b.Run(t, "versions of a markup name", 20*time.Second,
		chromedp.Click("#versions-close", chromedp.ByQuery),
		chromedp.WaitNotVisible("#versions", chromedp.ByQuery),
		chromedp.Click(`#crumbs button[data-path="/"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-path="/`+hostile+`"]`, chromedp.ByQuery),
		chromedp.Focus(`tr[data-path="/`+hostile+`"]`, chromedp.ByQuery),
		chromedp.KeyEvent("v"),
		chromedp.WaitVisible("#versions-list li.version", chromedp.ByQuery),
		chromedp.Text("#versions-title", &title, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('#versions img').length`, &imgs),
		chromedp.Evaluate(`document.querySelectorAll('#versions-list li').length`, &n),
	)
	if title != "Versions of “"+hostile+"”" || imgs != 0 || n != 1 {
		t.Fatalf("title %q, %d img elements, %d versions; want the name as text and one version", title, imgs, n)
	}
}
