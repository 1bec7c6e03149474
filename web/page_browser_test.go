package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"netdisk/apitype"
	"netdisk/testutil"
	"netdisk/web/browsertest"
)

// addUser creates a user through the admin API.
func addUser(t *testing.T, d *testutil.Daemon, name, pass string, quota int64) {
	t.Helper()
	body, _ := json.Marshal(apitype.NewUser{Name: name, Password: pass, Quota: quota})
	resp, err := d.Do(context.Background(), "POST", "/api/v1/admin/users", "admin", d.AdminPass, body, map[string]string{"Content-Type": "application/json"})
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create %s: %v %v", name, err, resp)
	}
	resp.Body.Close()
}

// TestBrowserSizes: the page prints sizes as the CLI and the server's
// messages do (internal/bytesize): its formatter gives every text of
// testdata/bytesize.json, and the listing and the quota bar use it.
func TestBrowserSizes(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t)
	addUser(t, d, "sam", "sam-password", 10<<30)
	resp, err := d.Do(context.Background(), "PUT", "/dav/half.bin", "sam", "sam-password", make([]byte, 1536), nil)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("PUT: %v %v", err, resp)
	}
	resp.Body.Close()
	b.SignIn(t, d.URL, "sam", "sam-password")

	cases := testutil.ByteSizes(t)
	ns := make([]int64, len(cases))
	for i, c := range cases {
		ns[i] = c.N
	}
	js, _ := json.Marshal(ns)
	var got []string
	b.Run(t, "format the table", 20*time.Second, chromedp.Evaluate(
		`import('/static/size.js').then(m => `+string(js)+`.map(n => m.fmtBytes(n)))`, &got, awaitPromise))
	if len(got) != len(cases) {
		t.Fatalf("formatted %d of %d cases", len(got), len(cases))
	}
	for i, c := range cases {
		if got[i] != c.Text {
			t.Errorf("fmtBytes(%d) = %q, want %q (as internal/bytesize)", c.N, got[i], c.Text)
		}
	}
	var size, quota string
	b.Run(t, "read the listing", 20*time.Second,
		chromedp.WaitVisible(`tr[data-path="/half.bin"]`, chromedp.ByQuery),
		chromedp.Text(`tr[data-path="/half.bin"] td.c-size`, &size, chromedp.ByQuery),
		chromedp.Poll(`document.getElementById('quota-text').textContent`, &quota))
	if size != "1.5 KiB" || !strings.Contains(quota, "1.5 KiB of 10 GiB used") {
		t.Fatalf("listing says %q, quota bar %q; want 1.5 KiB and \"1.5 KiB of 10 GiB used\"", size, quota)
	}
}

// TestBrowserUploadOrder: the upload panel shows what is still going on
// top (a paused upload, whatever finished after it), then what failed, then
// what finished, newest first.
func TestBrowserUploadOrder(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	p := browsertest.NewProxy(t, d.URL)
	tmp := t.TempDir()
	b.SignIn(t, p.URL, "admin", d.AdminPass)

	p.Hold(2)
	big := writeFile(t, tmp, "big.bin", randomBytes(20, chunkedMin+4*chunk))
	b.Run(t, "pick a big file", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{big}, chromedp.ByQuery))
	p.WaitChunksOK(t, 2, 60*time.Second)
	b.Run(t, "pause it", 20*time.Second,
		chromedp.Click(`li.up[data-path="/big.bin"] .up-pause`, chromedp.ByQuery),
		chromedp.WaitVisible(`li.up[data-path="/big.bin"][data-state="paused"]`, chromedp.ByQuery))
	p.Release()

	seed := uint64(100)
	upload := func(name, state string) {
		t.Helper()
		seed++
		f := writeFile(t, tmp, name, randomBytes(seed, 3000))
		b.Run(t, "pick "+name, 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{f}, chromedp.ByQuery))
		if row := b.WaitUpload(t, "/"+name, 60*time.Second, "done", "error"); row.State != state {
			t.Fatalf("%s: %+v, want %s", name, row, state)
		}
	}
	upload("first.txt", "done")
	upload("second.txt", "done")
	upload("third.txt", "done")
	p.SetWholeFault(func(int) int { return http.StatusBadRequest }) // refused for good: no retry
	upload("failed.txt", "error")
	p.SetWholeFault(nil)
	upload("fourth.txt", "done")

	var order []string
	b.Run(t, "read the panel", 10*time.Second, chromedp.Evaluate(
		`[...document.querySelectorAll('#uploads-list li.up')].map(r => r.dataset.path + ' ' + r.dataset.state)`, &order))
	want := []string{"/big.bin paused", "/failed.txt error", "/fourth.txt done", "/third.txt done", "/second.txt done", "/first.txt done"}
	if strings.Join(order, ", ") != strings.Join(want, ", ") {
		t.Fatalf("panel order:\n%s\nwant\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
	shooter{t: t, b: b, dir: os.Getenv("NETDISK_SCREENSHOTS")}.both("upload-order")
	b.Run(t, "resume", 10*time.Second, chromedp.Click(`li.up[data-path="/big.bin"] .up-resume`, chromedp.ByQuery))
	if row := b.WaitUpload(t, "/big.bin", 60*time.Second, "done", "error"); row.State != "done" {
		t.Fatalf("resumed: %+v", row)
	}
	b.Run(t, "read the panel again", 10*time.Second, chromedp.Evaluate(
		`[...document.querySelectorAll('#uploads-list li.up')].map(r => r.dataset.path + ' ' + r.dataset.state)`, &order))
	if order[0] != "/failed.txt error" || order[1] != "/big.bin done" {
		t.Fatalf("after the big file finished: %q, want the failed one, then it (the newest finished)", order)
	}
}

// stat returns the API's node of path.
func stat(t *testing.T, d *testutil.Daemon, path string) apitype.Node {
	t.Helper()
	resp, err := d.Do(context.Background(), "GET", "/api/v1/fs/stat?path="+path, "admin", d.AdminPass, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var n apitype.Node
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&n) != nil {
		t.Fatalf("stat %s: %d", path, resp.StatusCode)
	}
	return n
}

var getlastmodified = regexp.MustCompile(`<[^>]*getlastmodified[^>]*>([^<]+)<`)

// davModified is path's getlastmodified as PROPFIND answers it.
func davModified(t *testing.T, d *testutil.Daemon, path string) time.Time {
	t.Helper()
	resp, err := d.Do(context.Background(), "PROPFIND", "/dav"+path, "admin", d.AdminPass, nil, map[string]string{"Depth": "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := getlastmodified.FindSubmatch(body)
	if resp.StatusCode != 207 || m == nil {
		t.Fatalf("PROPFIND %s: %d %s", path, resp.StatusCode, body)
	}
	tm, err := http.ParseTime(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// TestBrowserUploadKeepsMtime: a file uploaded from the page keeps its
// modification time on every path the page takes: one request (under
// smallFileLimit), chunked, instant (content the user holds, small and big),
// a folder's files and a drop.
func TestBrowserUploadKeepsMtime(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	tmp := t.TempDir()
	small, big := randomBytes(30, 3*chunk+5), randomBytes(31, chunkedMin+2*chunk)
	files := map[string]struct {
		data  []byte
		mtime time.Time
		how   string
	}{
		"small.txt":      {small, time.Date(2021, 3, 4, 5, 6, 7, 250e6, time.UTC), "one request"},
		"big.bin":        {big, time.Date(2019, 11, 12, 13, 14, 15, 500e6, time.UTC), "chunked"},
		"small-copy.txt": {small, time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC), "instant"},
		"big-copy.bin":   {big, time.Date(2018, 6, 7, 8, 9, 10, 125e6, time.UTC), "instant"},
	}
	b.SignIn(t, d.URL, "admin", d.AdminPass)
	for _, name := range []string{"small.txt", "big.bin", "small-copy.txt", "big-copy.bin"} {
		f := files[name]
		p := writeFile(t, tmp, name, f.data)
		if err := os.Chtimes(p, f.mtime, f.mtime); err != nil {
			t.Fatal(err)
		}
		b.Run(t, "pick "+name, 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{p}, chromedp.ByQuery))
		row := b.WaitUpload(t, "/"+name, 60*time.Second, "done", "error")
		if row.State != "done" || row.Instant != (f.how == "instant") {
			t.Fatalf("%s: %+v, want done (%s)", name, row, f.how)
		}
		if got := stat(t, d, "/"+name).MTime.Time; !got.Equal(f.mtime) {
			t.Errorf("%s (%s): mtime %v, want the file's %v", name, f.how, got, f.mtime)
		}
		if got := davModified(t, d, "/"+name); !got.Equal(f.mtime.Truncate(time.Second)) {
			t.Errorf("%s (%s): getlastmodified %v, want %v", name, f.how, got, f.mtime.Truncate(time.Second))
		}
	}

	// A folder (the Folder button): its files keep theirs.
	album := filepath.Join(tmp, "album")
	inAlbum := map[string]time.Time{"a.txt": time.Date(2016, 1, 2, 3, 4, 5, 0, time.UTC), "b.txt": time.Date(2015, 7, 8, 9, 10, 11, 0, time.UTC)}
	for name, mt := range inAlbum {
		p := writeFile(t, mustMkdir(t, album), name, []byte("in the album: "+name))
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	b.Run(t, "pick a folder", 20*time.Second, chromedp.SetUploadFiles("#pick-dir", []string{album}, chromedp.ByQuery))
	for name, mt := range inAlbum {
		if row := b.WaitUpload(t, "/album/"+name, 60*time.Second, "done", "error"); row.State != "done" {
			t.Fatalf("album/%s: %+v", name, row)
		}
		if got := stat(t, d, "/album/"+name).MTime.Time; !got.Equal(mt) {
			t.Errorf("album/%s: mtime %v, want %v", name, got, mt)
		}
	}

	// A drop.
	dropped := time.Date(2017, 5, 6, 7, 8, 9, 0, time.UTC)
	var ok bool
	b.Run(t, "drop a file", 20*time.Second, chromedp.Evaluate(fmt.Sprintf(`(() => {
		const dt = new DataTransfer();
		dt.items.add(new File(['dropped with a date'], 'dropped.txt', {type: 'text/plain', lastModified: %d}));
		const z = document.getElementById('dropzone');
		for (const type of ['dragenter', 'dragover', 'drop']) z.dispatchEvent(new DragEvent(type, {bubbles: true, cancelable: true, dataTransfer: dt}));
		return true;
	})()`, dropped.UnixMilli()), &ok))
	if row := b.WaitUpload(t, "/dropped.txt", 60*time.Second, "done", "error"); row.State != "done" {
		t.Fatalf("dropped: %+v", row)
	}
	if got := stat(t, d, "/dropped.txt").MTime.Time; !got.Equal(dropped) {
		t.Errorf("dropped.txt: mtime %v, want %v", got, dropped)
	}
}

func mustMkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// colorOf is the computed CSS color of the first element matching sel.
func colorOf(sel string) string {
	return fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).color`, sel)
}

// TestBrowserSignedOutIsNoError: signing out, a session that ended and a
// changed password are notices, not errors: not in the error style (class,
// colour, alert role), and an upload stopped by the session's end waits
// unstyled as a failure; a wrong password still is an error.
func TestBrowserSignedOutIsNoError(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t)
	shots := shooter{t: t, b: b, dir: os.Getenv("NETDISK_SCREENSHOTS")}
	b.SignIn(t, d.URL, "admin", d.AdminPass)
	var danger string
	b.Run(t, "the error colour", 10*time.Second, chromedp.Evaluate(
		`getComputedStyle(document.documentElement).getPropertyValue('--danger').trim()`, &danger))
	type look struct {
		Text, Class, Role, Color string
	}
	read := func(what string) look {
		t.Helper()
		var l look
		b.Run(t, what, 10*time.Second, chromedp.Evaluate(`(() => { const p = document.getElementById('signin-error');
			return {text: p.textContent, class: p.className, role: p.getAttribute('role'), color: getComputedStyle(p).color}; })()`, &l))
		return l
	}
	var red string
	b.Run(t, "the error colour as computed", 10*time.Second, chromedp.Evaluate(
		`(() => { const s = document.createElement('span'); s.style.color = 'var(--danger)'; document.body.append(s);
			const c = getComputedStyle(s).color; s.remove(); return c; })()`, &red))
	if danger == "" || red == "" {
		t.Fatal("no --danger colour to compare with")
	}
	notice := func(l look, want string) {
		t.Helper()
		if !strings.Contains(l.Text, want) || strings.Contains(l.Class, "error") || l.Role == "alert" || l.Color == red {
			t.Errorf("%q: class %q, role %q, colour %s; want a notice, not the error style (%s)", l.Text, l.Class, l.Role, l.Color, red)
		}
	}

	b.Run(t, "sign out", 20*time.Second, chromedp.Click("#signout", chromedp.ByQuery), chromedp.WaitVisible("#signin-name", chromedp.ByQuery))
	notice(read("signed out"), "signed out")
	shots.both("signed-out")

	b.Run(t, "a wrong password", 20*time.Second,
		chromedp.SetValue("#signin-name", "admin", chromedp.ByQuery),
		chromedp.SetValue("#signin-pass", "wrong", chromedp.ByQuery),
		chromedp.Click("#signin-submit", chromedp.ByQuery),
		chromedp.Poll(`document.getElementById('signin-error').textContent.includes('Wrong')`, nil))
	if l := read("wrong password"); !strings.Contains(l.Class, "form-error") || l.Role != "alert" || l.Color != red {
		t.Errorf("wrong password: %+v, want the error style (%s)", l, red)
	}

	// The session ends behind the page's back: the page says so as a
	// notice, and the upload it stopped is not shown as failed.
	b.SignIn(t, d.URL, "admin", d.AdminPass)
	f := writeFile(t, t.TempDir(), "later.txt", []byte("sent after signing in again"))
	var status int
	b.Run(t, "end the session", 20*time.Second, chromedp.Evaluate(
		`fetch('/web/session').then(r => r.json()).then(s => fetch('/web/logout', {method: 'POST', headers: {'X-CSRF-Token': s.csrf}})).then(r => r.status)`, &status, awaitPromise))
	b.Run(t, "upload without a session", 30*time.Second,
		chromedp.SetUploadFiles("#pick-files", []string{f}, chromedp.ByQuery),
		chromedp.Poll(`document.getElementById('signin-error').textContent.includes('session has ended')`, nil))
	notice(read("session ended"), "session has ended")
	row := b.WaitUpload(t, "/later.txt", 30*time.Second, "error")
	var meta string
	b.Run(t, "the stopped upload", 10*time.Second, chromedp.Evaluate(colorOf(`li.up[data-path="/later.txt"] .up-meta`), &meta))
	if !strings.Contains(row.Text, "Signed out") || meta == red {
		t.Errorf("upload stopped by the session's end: %+v in %s, want it not in the error colour %s", row, meta, red)
	}
}
