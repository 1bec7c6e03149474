package web_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"netdisk/testutil"
	"netdisk/web/browsertest"
)

// The browser tests drive the page in real headless Chromium against the real
// daemon. NETDISK_SCREENSHOTS=DIR also saves the main screens there (the
// README's docs/screenshots/ are made this way).

const chunk = 64 << 10 // the daemon's --chunk-size in these tests: files of a few chunks stay small

// chunkedMin is the server's smallFileLimit (seed 004: 8 MiB): the page
// sends smaller files in one request, so tests of the chunked path (resume,
// pause, held or failing chunks) use files of at least this size.
const chunkedMin = 8 << 20

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func davGet(t *testing.T, d *testutil.Daemon, path string) (int, []byte) {
	t.Helper()
	resp, err := d.Do(context.Background(), "GET", "/dav"+path, "admin", d.AdminPass, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func pngImage(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 480, 300))
	for y := range 300 {
		for x := range 480 {
			img.Set(x, y, color.RGBA{uint8(60 + x/4), uint8(110 + y/3), 230, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type shooter struct {
	t   *testing.T
	b   *browsertest.Browser
	dir string
}

// shot saves the viewport at width×height as NAME-WIDTH.png when
// NETDISK_SCREENSHOTS is set.
func (s shooter) shot(name string, width, height int64) {
	if s.dir == "" {
		return
	}
	var buf []byte
	s.b.Run(s.t, "screenshot "+name, 20*time.Second,
		chromedp.EmulateViewport(width, height),
		chromedp.Sleep(300*time.Millisecond), // let the layout and transitions settle: a picture, not an assertion
		chromedp.CaptureScreenshot(&buf),
		chromedp.EmulateViewport(1400, 900),
	)
	if err := os.WriteFile(filepath.Join(s.dir, fmt.Sprintf("%s-%d.png", name, width)), buf, 0o644); err != nil {
		s.t.Fatal(err)
	}
}

func (s shooter) both(name string) { s.shot(name, 1400, 900); s.shot(name, 400, 860) }

// TestBrowserDrive walks through the page as a user: sign in, create a
// folder, upload by file input and by drop, see the listing, upload the same
// bytes under another name (instant), rename, move, download a file and a
// folder and compare bytes, preview, delete, sign out.
func TestBrowserDrive(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	shots := shooter{t: t, b: b, dir: os.Getenv("NETDISK_SCREENSHOTS")}
	tmp := t.TempDir()
	data := randomBytes(1, 5*chunk+1234) // 6 chunks, the last one short
	a := writeFile(t, tmp, "a.bin", data)
	copyPath := writeFile(t, filepath.Join(tmp), "copy-of-a.bin", data)
	pic := writeFile(t, tmp, "sunrise.png", pngImage(t))
	notes := writeFile(t, tmp, "notes.md", []byte("# Trip notes\n\n- Pack light\n- Book the ferry for 7:40\n- Photos go to /Photos\n"))

	b.Run(t, "open the page", 30*time.Second, chromedp.Navigate(d.URL+"/"), chromedp.WaitVisible("#signin-name", chromedp.ByQuery))
	shots.both("signin")
	b.SignIn(t, d.URL, "admin", d.AdminPass)
	shots.both("empty")

	// Create a folder.
	b.Run(t, "create a folder", 20*time.Second,
		chromedp.Click("#btn-mkdir", chromedp.ByQuery),
		answerDialog("Photos"),
		chromedp.WaitVisible(`tr[data-path="/Photos"]`, chromedp.ByQuery),
	)

	// Upload through the file input: the panel shows it done, the listing has it.
	b.Run(t, "pick files", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{a, pic, notes}, chromedp.ByQuery))
	row := b.WaitUpload(t, "/a.bin", 60*time.Second, "done", "error")
	if row.State != "done" || row.Instant || row.Sent != int64(len(data)) {
		t.Fatalf("upload of a.bin: %+v, want done with %d bytes sent", row, len(data))
	}
	b.WaitUpload(t, "/sunrise.png", 60*time.Second, "done")
	b.WaitUpload(t, "/notes.md", 60*time.Second, "done")
	b.Run(t, "listing shows the upload", 20*time.Second, chromedp.WaitVisible(`tr[data-path="/a.bin"]`, chromedp.ByQuery))
	if code, got := davGet(t, d, "/a.bin"); code != 200 || !bytes.Equal(got, data) {
		t.Fatalf("a.bin on the server: %d, %d bytes, equal %v", code, len(got), bytes.Equal(got, data))
	}

	// Upload through a synthetic drop of a file.
	dropped := strings.Repeat("hello from a drop\n", 5000) // 90000 bytes: two chunks
	var ok bool
	b.Run(t, "drop a file", 20*time.Second, chromedp.Evaluate(fmt.Sprintf(`(() => {
		const dt = new DataTransfer();
		dt.items.add(new File([%q.repeat(5000)], 'dropped.txt', {type: 'text/plain'}));
		const z = document.getElementById('dropzone');
		for (const type of ['dragenter', 'dragover', 'drop']) z.dispatchEvent(new DragEvent(type, {bubbles: true, cancelable: true, dataTransfer: dt}));
		return true;
	})()`, "hello from a drop\n"), &ok))
	if row := b.WaitUpload(t, "/dropped.txt", 60*time.Second, "done", "error"); row.State != "done" {
		t.Fatalf("dropped upload: %+v", row)
	}
	if code, got := davGet(t, d, "/dropped.txt"); code != 200 || string(got) != dropped {
		t.Fatalf("dropped.txt on the server: %d, %d bytes", code, len(got))
	}

	// The same bytes under another name complete instantly: nothing sent.
	b.Run(t, "pick the copy", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{copyPath}, chromedp.ByQuery))
	row = b.WaitUpload(t, "/copy-of-a.bin", 60*time.Second, "done", "error")
	if row.State != "done" || !row.Instant || row.Sent != 0 || !strings.Contains(row.Text, "Instant") {
		t.Fatalf("same bytes under another name: %+v, want instant with nothing sent", row)
	}
	if code, got := davGet(t, d, "/copy-of-a.bin"); code != 200 || !bytes.Equal(got, data) {
		t.Fatalf("copy-of-a.bin on the server: %d", code)
	}
	b.Run(t, "listing shows the copy", 20*time.Second, chromedp.WaitVisible(`tr[data-path="/copy-of-a.bin"]`, chromedp.ByQuery))
	shots.both("files")

	// Preview an image and a text file.
	b.Run(t, "preview the image", 20*time.Second,
		chromedp.DoubleClick(`tr[data-path="/sunrise.png"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#preview-body img`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('#preview-body img').naturalWidth === 480`, nil),
	)
	shots.both("preview")
	b.Run(t, "close the preview", 10*time.Second, chromedp.Click("#preview-close", chromedp.ByQuery), chromedp.WaitNotVisible("#preview", chromedp.ByQuery))
	var text string
	b.Run(t, "preview the text", 20*time.Second,
		chromedp.DoubleClick(`tr[data-path="/notes.md"]`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('#preview-body pre') && document.querySelector('#preview-body pre').textContent.includes('ferry')`, nil),
		chromedp.Text("#preview-body pre", &text, chromedp.ByQuery),
		chromedp.Click("#preview-close", chromedp.ByQuery),
	)
	if !strings.HasPrefix(text, "# Trip notes") {
		t.Fatalf("text preview: %q", text)
	}

	// Rename a.bin to b.bin.
	b.Run(t, "rename", 20*time.Second,
		selectRow("/a.bin"),
		chromedp.Click("#act-rename", chromedp.ByQuery),
		answerDialog("b.bin"),
		chromedp.WaitVisible(`tr[data-path="/b.bin"]`, chromedp.ByQuery),
	)
	// Move b.bin into /Photos.
	b.Run(t, "move", 20*time.Second,
		selectRow("/b.bin"),
		chromedp.Click("#act-move", chromedp.ByQuery),
		answerDialog("/Photos"),
		chromedp.WaitNotPresent(`tr[data-path="/b.bin"]`, chromedp.ByQuery),
		chromedp.DoubleClick(`tr[data-path="/Photos"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-path="/Photos/b.bin"]`, chromedp.ByQuery),
	)
	// Download the file and compare bytes.
	b.Run(t, "download a file", 20*time.Second,
		selectRow("/Photos/b.bin"),
		chromedp.Click("#act-download", chromedp.ByQuery),
	)
	if got := b.NextDownload(t, 30*time.Second); !bytes.Equal(got, data) {
		t.Fatalf("downloaded b.bin: %d bytes, want the %d uploaded", len(got), len(data))
	}
	// Download the folder as a zip.
	b.Run(t, "download a folder", 20*time.Second,
		chromedp.Click(`#crumbs button[data-path="/"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-path="/Photos"]`, chromedp.ByQuery),
		selectRow("/Photos"),
		chromedp.Click("#act-download", chromedp.ByQuery),
	)
	z := b.NextDownload(t, 30*time.Second)
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatalf("folder download is not a zip: %v", err)
	}
	found := false
	for _, f := range zr.File {
		if f.Name == "Photos/b.bin" {
			rc, _ := f.Open()
			got, _ := io.ReadAll(rc)
			rc.Close()
			found = bytes.Equal(got, data)
		}
	}
	if !found {
		t.Fatalf("zip lacks Photos/b.bin with the uploaded bytes")
	}

	// Delete the folder, with confirmation.
	b.Run(t, "ask to delete", 20*time.Second,
		chromedp.Click("#act-delete", chromedp.ByQuery),
		chromedp.WaitVisible("#dlg-ok", chromedp.ByQuery),
	)
	shots.both("delete")
	b.Run(t, "confirm delete", 20*time.Second,
		chromedp.Click("#dlg-ok", chromedp.ByQuery),
		chromedp.WaitNotPresent(`tr[data-path="/Photos"]`, chromedp.ByQuery),
	)
	if code, _ := davGet(t, d, "/Photos/b.bin"); code != 404 {
		t.Fatalf("deleted folder's file: %d", code)
	}

	// Sign out: the session is gone for the page and the API.
	var status int
	b.Run(t, "sign out", 20*time.Second,
		chromedp.Click("#signout", chromedp.ByQuery),
		chromedp.WaitVisible("#signin-name", chromedp.ByQuery),
	)
	b.Run(t, "API after sign-out", 20*time.Second,
		chromedp.Evaluate(`fetch('/api/v1/quota', {headers: {'X-Netdisk-Web': '1'}}).then(r => r.status)`, &status, awaitPromise),
	)
	if status != 401 {
		t.Fatalf("API after sign-out: %d, want 401", status)
	}
}

func awaitPromise(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }

// TestBrowserResume: an upload interrupted by reloading the page resumes
// from the server's chunk bitmap when the same file is chosen again: only
// the missing chunks are sent.
func TestBrowserResume(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	p := browsertest.NewProxy(t, d.URL)
	shots := shooter{t: t, b: b, dir: os.Getenv("NETDISK_SCREENSHOTS")}
	const n = chunkedMin/chunk + 12
	data := randomBytes(2, n*chunk)
	f := writeFile(t, t.TempDir(), "holiday.mov", data)

	b.SignIn(t, p.URL, "admin", d.AdminPass)
	p.Hold(4) // the daemon gets 4 chunks, the rest wait
	b.Run(t, "pick a file", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{f}, chromedp.ByQuery))
	p.WaitChunksOK(t, 4, 60*time.Second)
	b.Run(t, "progress shows", 20*time.Second, chromedp.Poll(`(() => { const r = document.querySelector('li.up[data-path="/holiday.mov"]'); return r && r.dataset.state === 'running' && +r.dataset.sent === 4*65536; })()`, nil))
	shots.both("uploading")
	before := p.Bytes()

	b.Run(t, "reload", 20*time.Second, chromedp.Reload(), chromedp.WaitVisible(`li.up[data-path="/holiday.mov"][data-state="interrupted"]`, chromedp.ByQuery))
	p.Release()
	b.Run(t, "choose the same file again", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{f}, chromedp.ByQuery))
	row := b.WaitUpload(t, "/holiday.mov", 60*time.Second, "done", "error")
	// The server holds the 4 chunks let through, and may hold up to the 3
	// more that were held: a request the reload aborted can still be
	// forwarded when the proxy lets go, before it has seen the browser
	// leave. Whatever it holds is resumed, the rest sent, nothing twice.
	if row.State != "done" || row.Resumed < 4 || row.Resumed > 4+3 || row.Sent != int64(n-row.Resumed)*chunk {
		t.Fatalf("resumed upload: %+v, want the chunks the server held (4 to 7) resumed and only the others sent", row)
	}
	// After the reload the daemon answered the page's sends and, at most,
	// the held requests that slipped through: never more than the n-4
	// chunks it was missing.
	if after := p.Bytes() - before; after < row.Sent || after > int64((n-4)*chunk) {
		t.Fatalf("the daemon received %d bytes after the reload, want the page's %d and at most the %d missing chunks (%d)", after, row.Sent, n-4, (n-4)*chunk)
	}
	if code, got := davGet(t, d, "/holiday.mov"); code != 200 || !bytes.Equal(got, data) {
		t.Fatalf("resumed file on the server: %d, equal %v", code, bytes.Equal(got, data))
	}
}

// TestBrowserFailingServer: a server that keeps failing chunk uploads shows
// retries, then a clear error with a Retry button, and nothing is committed;
// Retry after the server recovers finishes the upload.
func TestBrowserFailingServer(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	p := browsertest.NewProxy(t, d.URL)
	data := randomBytes(3, chunkedMin+3*chunk)
	f := writeFile(t, t.TempDir(), "report.pdf", data)

	b.SignIn(t, p.URL, "admin", d.AdminPass)
	p.SetFault(func(int) int { return 500 })
	b.Run(t, "pick a file", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{f}, chromedp.ByQuery))
	row := b.WaitUpload(t, "/report.pdf", 60*time.Second, "error", "done")
	if row.State != "error" || row.Retries < 4 || !strings.Contains(row.Text, "Server error (500)") {
		t.Fatalf("failing server: %+v, want an error after retries", row)
	}
	if code, _ := davGet(t, d, "/report.pdf"); code != 404 {
		t.Fatalf("a failed upload is visible: %d", code)
	}
	shots := shooter{t: t, b: b, dir: os.Getenv("NETDISK_SCREENSHOTS")}
	shots.both("upload-error")
	p.SetFault(nil)
	b.Run(t, "retry", 20*time.Second, chromedp.Click(`li.up[data-path="/report.pdf"] .up-retry`, chromedp.ByQuery))
	if row := b.WaitUpload(t, "/report.pdf", 60*time.Second, "done", "error"); row.State != "done" {
		t.Fatalf("retry after recovery: %+v", row)
	}
	if code, got := davGet(t, d, "/report.pdf"); code != 200 || !bytes.Equal(got, data) {
		t.Fatalf("file after retry: %d", code)
	}
}

// TestBrowserOverQuota: a file over the user's quota is refused with a clear
// message and nothing is written; the session ending mid-way is reported as
// such.
func TestBrowserOverQuota(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	resp, err := d.Do(context.Background(), "POST", "/api/v1/admin/users", "admin", d.AdminPass,
		[]byte(`{"name":"bob","password":"bob-password","quota":100000}`), map[string]string{"Content-Type": "application/json"})
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create bob: %v %v", err, resp)
	}
	resp.Body.Close()
	f := writeFile(t, t.TempDir(), "big.iso", randomBytes(4, 3*chunk))
	b.SignIn(t, d.URL, "bob", "bob-password")
	b.Run(t, "pick a file", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{f}, chromedp.ByQuery))
	row := b.WaitUpload(t, "/big.iso", 60*time.Second, "error", "done")
	// In the units the page and the CLI print sizes in (100000 B free,
	// 196608 B needed).
	if row.State != "error" || row.Sent != 0 || row.Text != "Not enough space in your drive: 97.7 KiB free, 192 KiB needed" {
		t.Fatalf("over quota: %+v", row)
	}
	resp, err = d.Do(context.Background(), "GET", "/api/v1/fs/stat?path=/big.iso", "bob", "bob-password", nil, nil)
	if err != nil || resp.StatusCode != 404 {
		t.Fatalf("over-quota file visible: %v %v", err, resp)
	}
	resp.Body.Close()

	// The session ends (signed out behind the page's back, as an expiry or
	// a new password would): an upload started then says so, the page
	// returns to the sign-in form, and after signing in the upload resumes.
	small := writeFile(t, t.TempDir(), "small.txt", []byte(strings.Repeat("fits in the quota\n", 500)))
	var status int
	b.Run(t, "sign out behind the page's back", 20*time.Second, chromedp.Evaluate(
		`fetch('/web/session').then(r => r.json()).then(s => fetch('/web/logout', {method: 'POST', headers: {'X-CSRF-Token': s.csrf}})).then(r => r.status)`, &status, awaitPromise))
	if status != 204 {
		t.Fatalf("sign-out behind the page's back: %d", status)
	}
	b.Run(t, "upload after the session ended", 30*time.Second,
		chromedp.SetUploadFiles("#pick-files", []string{small}, chromedp.ByQuery),
		chromedp.WaitVisible("#signin-error", chromedp.ByQuery),
		chromedp.Poll(`document.getElementById('signin-error').textContent.includes('session has ended')`, nil),
	)
	if row := b.WaitUpload(t, "/small.txt", 30*time.Second, "error", "done"); row.State != "error" || !strings.Contains(row.Text, "Signed out") {
		t.Fatalf("upload without a session: %+v", row)
	}
	b.Run(t, "sign in again", 30*time.Second,
		chromedp.SetValue("#signin-name", "bob", chromedp.ByQuery),
		chromedp.SetValue("#signin-pass", "bob-password", chromedp.ByQuery),
		chromedp.Click("#signin-submit", chromedp.ByQuery),
		chromedp.WaitVisible("#app", chromedp.ByQuery),
	)
	if row := b.WaitUpload(t, "/small.txt", 30*time.Second, "done"); row.Sent != 9000 {
		t.Fatalf("upload resumed after sign-in: %+v", row)
	}
}

// TestBrowserPauseCancel: Pause stops new chunk work until Resume; Cancel
// abandons the session and releases its quota reservation.
func TestBrowserPauseCancel(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	p := browsertest.NewProxy(t, d.URL)
	tmp := t.TempDir()
	const size = chunkedMin + 10*chunk
	data := randomBytes(5, size)
	f := writeFile(t, tmp, "video.mkv", data)
	g := writeFile(t, tmp, "backup.tar", randomBytes(6, size))
	b.SignIn(t, p.URL, "admin", d.AdminPass)

	p.Hold(2)
	b.Run(t, "pick a file", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{f}, chromedp.ByQuery))
	p.WaitChunksOK(t, 2, 60*time.Second)
	b.Run(t, "pause", 20*time.Second,
		chromedp.Click(`li.up[data-path="/video.mkv"] .up-pause`, chromedp.ByQuery),
		chromedp.WaitVisible(`li.up[data-path="/video.mkv"][data-state="paused"]`, chromedp.ByQuery),
	)
	p.Release()
	// The requests already in flight finish (N = 3 at most); no new one starts.
	b.Run(t, "in-flight chunks finish", 30*time.Second, chromedp.Poll(
		`(() => { const r = document.querySelector('li.up[data-path="/video.mkv"]'); return r.dataset.state === 'paused' && r.dataset.inflight === '0'; })()`, nil))
	if row := b.UploadState(t, "/video.mkv"); row.State != "paused" || row.Sent > 5*chunk || row.Sent != p.Bytes() {
		t.Fatalf("paused upload: %+v, the daemon has %d bytes", row, p.Bytes())
	}
	b.Run(t, "resume", 20*time.Second, chromedp.Click(`li.up[data-path="/video.mkv"] .up-resume`, chromedp.ByQuery))
	if row := b.WaitUpload(t, "/video.mkv", 60*time.Second, "done", "error"); row.State != "done" || row.Sent != int64(len(data)) {
		t.Fatalf("resumed after pause: %+v", row)
	}

	p.Hold(0)
	b.Run(t, "pick another", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{g}, chromedp.ByQuery))
	b.Run(t, "reserved", 20*time.Second, chromedp.WaitVisible(`li.up[data-path="/backup.tar"][data-state="running"]`, chromedp.ByQuery))
	if q := quota(t, d); q.Uploading != int64(size) {
		t.Fatalf("uploading while held: %+v", q)
	}
	// Every chunk hashed, the worker waits for the held ones: Cancel must
	// end it there too, not only while it still hashes (where a click
	// right after the start lands).
	b.Run(t, "hashed", 20*time.Second, chromedp.WaitVisible(
		fmt.Sprintf(`li.up[data-path="/backup.tar"][data-hashed="%d"]`, size), chromedp.ByQuery))
	b.Run(t, "cancel", 20*time.Second,
		chromedp.Click(`li.up[data-path="/backup.tar"] .up-cancel`, chromedp.ByQuery),
		chromedp.WaitVisible(`li.up[data-path="/backup.tar"][data-state="cancelled"]`, chromedp.ByQuery),
	)
	p.Release()
	deadline := time.Now().Add(20 * time.Second)
	for q := quota(t, d); q.Uploading != 0; q = quota(t, d) {
		if time.Now().After(deadline) {
			t.Fatalf("a cancelled upload keeps its reservation: %+v", q)
		}
		time.Sleep(50 * time.Millisecond) // the DELETE is sent by the worker, asynchronously to the click
	}
	if code, _ := davGet(t, d, "/backup.tar"); code != 404 {
		t.Fatalf("cancelled file visible: %d", code)
	}

	// Cancelled uploads give their place back: the page runs two files at
	// a time, so with two cancelled ones still holding theirs the next
	// file would wait for good.
	p.Hold(0)
	x1, x2 := writeFile(t, tmp, "x1.bin", randomBytes(8, chunkedMin+3*chunk)), writeFile(t, tmp, "x2.bin", randomBytes(9, chunkedMin+3*chunk))
	b.Run(t, "pick two", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{x1, x2}, chromedp.ByQuery))
	for _, name := range []string{"x1.bin", "x2.bin"} {
		b.Run(t, "hashed "+name, 20*time.Second, chromedp.WaitVisible(
			fmt.Sprintf(`li.up[data-path="/%s"][data-hashed="%d"]`, name, chunkedMin+3*chunk), chromedp.ByQuery))
		b.Run(t, "cancel "+name, 20*time.Second,
			chromedp.Click(fmt.Sprintf(`li.up[data-path="/%s"] .up-cancel`, name), chromedp.ByQuery),
			chromedp.WaitVisible(fmt.Sprintf(`li.up[data-path="/%s"][data-state="cancelled"]`, name), chromedp.ByQuery))
	}
	p.Release()
	x3 := randomBytes(10, 2*chunk+7)
	b.Run(t, "pick a third", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{writeFile(t, tmp, "x3.bin", x3)}, chromedp.ByQuery))
	if row := b.WaitUpload(t, "/x3.bin", 60*time.Second, "done", "error"); row.State != "done" || row.Sent != int64(len(x3)) {
		t.Fatalf("upload after two cancelled ones: %+v", row)
	}
}

type quotaBody struct{ Finished, Uploading, Unfinished int64 }

func quota(t *testing.T, d *testutil.Daemon) quotaBody {
	t.Helper()
	resp, err := d.Do(context.Background(), "GET", "/api/v1/quota", "admin", d.AdminPass, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var q quotaBody
	if err := json.NewDecoder(resp.Body).Decode(&q); err != nil {
		t.Fatal(err)
	}
	return q
}

// TestBrowserProof: bytes only another user holds are not sent again: the
// page answers the server's challenge with a proof (crypto.subtle in the
// Worker) and the upload completes instantly.
func TestBrowserProof(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	// Shared: one other owner is enough to make the content instant (by
	// proof); private mode keeps it hidden below its owner threshold.
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB", "--instant-upload", "shared")
	data := randomBytes(7, 4*chunk+99)
	resp, err := d.Do(context.Background(), "PUT", "/dav/original.bin", "admin", d.AdminPass, data, nil)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("admin's PUT: %v %v", err, resp)
	}
	resp.Body.Close()
	resp, err = d.Do(context.Background(), "POST", "/api/v1/admin/users", "admin", d.AdminPass,
		[]byte(`{"name":"carol","password":"carol-password"}`), map[string]string{"Content-Type": "application/json"})
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create carol: %v %v", err, resp)
	}
	resp.Body.Close()
	f := writeFile(t, t.TempDir(), "mine.bin", data)
	b.SignIn(t, d.URL, "carol", "carol-password")
	b.Run(t, "pick the file", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{f}, chromedp.ByQuery))
	row := b.WaitUpload(t, "/mine.bin", 60*time.Second, "done", "error")
	if row.State != "done" || !row.Instant || row.Sent != 0 {
		t.Fatalf("upload of content another user holds: %+v, want instant by proof", row)
	}
	resp, err = d.Do(context.Background(), "GET", "/dav/mine.bin", "carol", "carol-password", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(got, data) {
		t.Fatalf("carol's file: %d, equal %v", resp.StatusCode, bytes.Equal(got, data))
	}
}

// TestBrowserKeyboard: the listing works without a mouse: arrows move
// between rows, Enter opens a folder, Backspace goes back up, Space selects,
// F2 renames.
func TestBrowserKeyboard(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t)
	for _, dir := range []string{"/alpha", "/beta", "/alpha/inner"} {
		resp, err := d.Do(context.Background(), "MKCOL", "/dav"+dir, "admin", d.AdminPass, nil, nil)
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("MKCOL %s: %v %v", dir, err, resp)
		}
		resp.Body.Close()
	}
	b.SignIn(t, d.URL, "admin", d.AdminPass)
	var focused, current string
	b.Run(t, "arrows and Enter", 20*time.Second,
		chromedp.WaitVisible(`tr[data-path="/beta"]`, chromedp.ByQuery),
		chromedp.KeyEvent(kb.ArrowDown),
		chromedp.KeyEvent(kb.ArrowDown),
		chromedp.Evaluate(`document.activeElement.dataset.path`, &focused),
	)
	if focused != "/beta" {
		t.Fatalf("two ArrowDowns focus %q, want /beta", focused)
	}
	b.Run(t, "up and Enter", 20*time.Second,
		chromedp.KeyEvent(kb.ArrowUp),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(`tr[data-path="/alpha/inner"]`, chromedp.ByQuery),
		chromedp.Text(`#crumbs button[aria-current="page"]`, &current, chromedp.ByQuery),
	)
	if current != "alpha" {
		t.Fatalf("Enter on /alpha shows %q", current)
	}
	var selected int
	b.Run(t, "Backspace, Space, F2", 20*time.Second,
		chromedp.KeyEvent(kb.Backspace),
		chromedp.WaitVisible(`tr[data-path="/beta"]`, chromedp.ByQuery),
		chromedp.KeyEvent(kb.ArrowDown),
		chromedp.KeyEvent(" "),
		chromedp.Evaluate(`document.querySelectorAll('tr.sel').length`, &selected),
		chromedp.KeyEvent(kb.F2),
		chromedp.WaitVisible("#dlg-input", chromedp.ByQuery),
		chromedp.SetValue("#dlg-input", "gamma", chromedp.ByQuery),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(`tr[data-path="/gamma"]`, chromedp.ByQuery),
	)
	if selected != 1 {
		t.Fatalf("Space selected %d rows, want 1", selected)
	}
}

// selectRow selects the listing's row of path with a click on its size
// cell.
func selectRow(path string) chromedp.Action {
	return chromedp.Click(`tr[data-path="`+path+`"] td.c-size`, chromedp.ByQuery)
}

// answerDialog types value into the open name dialog and confirms it.
func answerDialog(value string) chromedp.Action {
	return chromedp.Tasks{
		chromedp.WaitVisible("#dlg-input", chromedp.ByQuery),
		chromedp.SetValue("#dlg-input", value, chromedp.ByQuery),
		chromedp.Click("#dlg-ok", chromedp.ByQuery),
	}
}

// TestBrowserSmallFileOneRequest: a file under smallFileLimit (seed 004: 8
// MiB) goes in one request (PUT file/upload), not chunk by chunk, retried
// like a chunk when the server fails; the same bytes again complete by the
// file check with nothing sent; a file of exactly the limit is chunked.
func TestBrowserSmallFileOneRequest(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	p := browsertest.NewProxy(t, d.URL)
	tmp := t.TempDir()
	data := randomBytes(7, 5*chunk+77) // 6 chunks of this server
	small := writeFile(t, tmp, "small.bin", data)
	again := writeFile(t, tmp, "again.bin", data)
	limit := randomBytes(8, chunkedMin) // the limit itself: chunked
	big := writeFile(t, tmp, "limit.bin", limit)

	b.SignIn(t, p.URL, "admin", d.AdminPass)
	p.SetWholeFault(func(n int) int {
		if n <= 2 {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	b.Run(t, "pick a small file", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{small}, chromedp.ByQuery))
	row := b.WaitUpload(t, "/small.bin", 60*time.Second, "done", "error")
	chunks, whole, wholeOK := p.Counts()
	if row.State != "done" || row.Instant || row.Sent != int64(len(data)) || row.Retries != 2 {
		t.Fatalf("small file: %+v, want done with %d bytes sent after 2 retries", row, len(data))
	}
	if chunks != 0 || whole != 3 || wholeOK != 1 {
		t.Fatalf("small file: %d chunk requests, %d one-request uploads (%d accepted); want 0, 3 (two failed) and 1", chunks, whole, wholeOK)
	}
	if code, got := davGet(t, d, "/small.bin"); code != 200 || !bytes.Equal(got, data) {
		t.Fatalf("small.bin on the server: %d, equal %v", code, bytes.Equal(got, data))
	}

	b.Run(t, "pick the same bytes again", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{again}, chromedp.ByQuery))
	row = b.WaitUpload(t, "/again.bin", 60*time.Second, "done", "error")
	if c2, w2, _ := p.Counts(); row.State != "done" || !row.Instant || row.Sent != 0 || c2 != 0 || w2 != whole {
		t.Fatalf("same bytes again: %+v, %d chunk requests, %d more one-request uploads; want instant with nothing sent", row, c2, w2-whole)
	}
	if code, got := davGet(t, d, "/again.bin"); code != 200 || !bytes.Equal(got, data) {
		t.Fatalf("again.bin on the server: %d", code)
	}

	b.Run(t, "pick a file of the limit", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{big}, chromedp.ByQuery))
	row = b.WaitUpload(t, "/limit.bin", 120*time.Second, "done", "error")
	if c3, w3, _ := p.Counts(); row.State != "done" || c3 != len(limit)/chunk || w3 != whole {
		t.Fatalf("file of the limit: %+v, %d chunk requests, %d more one-request uploads; want %d chunks and none", row, c3, w3-whole, len(limit)/chunk)
	}
	if code, got := davGet(t, d, "/limit.bin"); code != 200 || !bytes.Equal(got, limit) {
		t.Fatalf("limit.bin on the server: %d", code)
	}
}
