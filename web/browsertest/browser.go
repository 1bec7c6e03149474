// Package browsertest drives the web page in a real headless Chromium
// (Debian's chromium, through chromedp) for the browser tests and the
// benchmark. Under CI=true a missing browser fails the test.
package browsertest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"netdisk/testutil"
)

// Flags are the Chromium switches every run uses: headless, no sandbox
// (containers), and nothing that talks to Google or updates itself.
func Flags(userDataDir string) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(userDataDir),
		chromedp.WindowSize(1400, 900),
		// Chromium's start (until it prints its DevTools address) took
		// over chromedp's default 20 s with the CPUs saturated beside it;
		// a slow start is not what any test checks.
		chromedp.WSURLReadTimeout(startTimeout),
	}
}

// startTimeout bounds Chromium's start: a second or two on an idle machine,
// over a minute seen with three CPU-bound processes beside it on two cores.
const startTimeout = 2 * time.Minute

// Browser is one Chromium with one tab and a download folder.
type Browser struct {
	Ctx       context.Context
	Downloads string

	mu  sync.Mutex
	all chan string // GUIDs of completed downloads, in order
}

// Start launches Chromium (path from testutil.RequireTool) with a fresh
// profile; it is closed at test cleanup.
func Start(t testing.TB, chromium string) *Browser {
	t.Helper()
	// Not t.TempDir: Chromium's helper processes may still write to the
	// profile for a moment after the browser closed, and t.TempDir's
	// cleanup fails the test on a directory that is not empty.
	dir, err := os.MkdirTemp("", "netdisk-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	b, closeFn, err := Launch(dir, chromium, func(f string, a ...any) { t.Logf(f, a...) })
	if err != nil {
		os.RemoveAll(dir)
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		closeFn()
		for range 50 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("could not remove %s", dir)
	})
	return b
}

// Launch starts Chromium with a fresh profile and a download folder under
// dir (for callers without a testing.TB, such as the benchmark). close ends
// the browser and waits for it.
func Launch(dir, chromium string, logf func(string, ...any)) (b *Browser, close func(), err error) {
	opts := append(Flags(filepath.Join(dir, "profile")), chromedp.ExecPath(chromium))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	// chromedp logs CDP events it does not model (newer Chromium sends more);
	// they are noise, not failures.
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(f string, a ...any) {
		if !strings.Contains(f, "unhandled") && !strings.Contains(fmt.Sprint(a...), "unhandled") {
			logf("chromedp: "+f, a...)
		}
	}))
	close = func() { cancel(); acancel() }
	b = &Browser{Ctx: ctx, Downloads: filepath.Join(dir, "downloads"), all: make(chan string, 64)}
	if err := os.MkdirAll(b.Downloads, 0o755); err != nil {
		close()
		return nil, nil, err
	}
	seen := map[string]bool{}
	onEvent := func(ev any) {
		if e, ok := ev.(*browser.EventDownloadProgress); ok && e.State == browser.DownloadProgressStateCompleted {
			b.mu.Lock()
			dup := seen[e.GUID]
			seen[e.GUID] = true
			b.mu.Unlock()
			if !dup {
				b.all <- e.GUID
			}
		}
	}
	chromedp.ListenBrowser(ctx, onEvent)
	chromedp.ListenTarget(ctx, onEvent)
	// The first Run starts the browser, whose lifetime is that Run's
	// context: it must be ctx itself, not one with a deadline. A Chromium
	// that does not start within startTimeout is closed instead of hanging.
	started := make(chan error, 1)
	go func() {
		started <- chromedp.Run(ctx, browser.SetDownloadBehavior(browser.SetDownloadBehaviorBehaviorAllowAndName).
			WithDownloadPath(b.Downloads).WithEventsEnabled(true))
	}()
	select {
	case err = <-started:
	case <-time.After(startTimeout):
		close()
		err = fmt.Errorf("chromium did not start within %v: %w", startTimeout, <-started)
	}
	if err != nil {
		close()
		return nil, nil, err
	}
	return b, close, nil
}

// Run runs actions with a deadline, failing the test with what was being done.
func (b *Browser) Run(t testing.TB, what string, timeout time.Duration, actions ...chromedp.Action) {
	t.Helper()
	if err := b.Do(timeout, actions...); err != nil {
		t.Fatalf("%s: %v\npage: %s", what, err, b.describe())
	}
}

// describe says what the page shows, for a failure message.
func (b *Browser) describe() string {
	var s string
	err := b.Do(5*time.Second, chromedp.Evaluate(`JSON.stringify({
		signin: !document.getElementById('signin').hidden, signinError: document.getElementById('signin-error').textContent,
		uploads: [...document.querySelectorAll('li.up')].map(r => r.dataset.path + ' ' + r.dataset.state + ': ' + r.querySelector('.up-meta').textContent),
		dialog: !!document.querySelector('dialog[open]'), toast: document.getElementById('toast').textContent})`, &s))
	if err != nil {
		return "(cannot read the page: " + err.Error() + ")"
	}
	return s
}

// Do runs actions with a deadline.
func (b *Browser) Do(timeout time.Duration, actions ...chromedp.Action) error {
	ctx, cancel := context.WithTimeout(b.Ctx, timeout)
	defer cancel()
	return chromedp.Run(ctx, actions...)
}

// NextDownload waits for the next completed download and returns its bytes.
func (b *Browser) NextDownload(t testing.TB, timeout time.Duration) []byte {
	t.Helper()
	select {
	case guid := <-b.all:
		data, err := os.ReadFile(filepath.Join(b.Downloads, guid))
		if err != nil {
			t.Fatal(err)
		}
		return data
	case <-time.After(timeout):
		t.Fatalf("no download completed within %v", timeout)
	}
	return nil
}

// UploadRow is what the upload panel shows for one file.
type UploadRow struct {
	State   string `json:"state"`
	Sent    int64  `json:"sent"`
	Resumed int    `json:"resumed"`
	Retries int    `json:"retries"`
	Instant bool   `json:"instant"`
	Text    string `json:"text"`
}

// WaitUpload waits until the panel's row for path reaches one of states.
func (b *Browser) WaitUpload(t testing.TB, path string, timeout time.Duration, states ...string) UploadRow {
	t.Helper()
	var row UploadRow
	b.Run(t, "wait for upload of "+path+" to be "+strings.Join(states, "/"), timeout,
		chromedp.Poll(WaitUploadJS(path, states...), &row, chromedp.WithPollingInterval(50*time.Millisecond)))
	return row
}

// WaitUploadJS is an expression that is the panel's row for path once it is
// in one of states, null before.
func WaitUploadJS(path string, states ...string) string {
	return fmt.Sprintf(`(() => {
		const r = document.querySelector('li.up[data-path=%q]');
		if (!r || !%s.includes(r.dataset.state)) return null;
		return {state: r.dataset.state, sent: +r.dataset.sent, resumed: +r.dataset.resumed, retries: +r.dataset.retries,
			instant: r.dataset.instant === '1', text: r.querySelector('.up-meta').textContent};
	})()`, path, jsList(states))
}

// UploadState reads the row's state now ("" when there is none).
func (b *Browser) UploadState(t testing.TB, path string) UploadRow {
	t.Helper()
	var row UploadRow
	b.Run(t, "read upload row", 10*time.Second, chromedp.Evaluate(fmt.Sprintf(`(() => {
		const r = document.querySelector('li.up[data-path=%q]');
		return r ? {state: r.dataset.state, sent: +r.dataset.sent, resumed: +r.dataset.resumed, retries: +r.dataset.retries,
			instant: r.dataset.instant === '1', text: r.querySelector('.up-meta').textContent} : {state: ''};
	})()`, path), &row))
	return row
}

func jsList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ",") + "]"
}

// SignIn fills the sign-in form and waits for the file browser.
func (b *Browser) SignIn(t testing.TB, base, user, pass string) {
	t.Helper()
	b.Run(t, "sign in", 30*time.Second, SignInActions(base, user, pass)...)
}

// SignInActions sign in through the form and wait for the file browser.
func SignInActions(base, user, pass string) []chromedp.Action {
	return []chromedp.Action{
		chromedp.Navigate(base + "/"),
		chromedp.WaitVisible("#signin-name", chromedp.ByQuery),
		chromedp.SendKeys("#signin-name", user, chromedp.ByQuery),
		chromedp.SendKeys("#signin-pass", pass, chromedp.ByQuery),
		chromedp.Click("#signin-submit", chromedp.ByQuery),
		chromedp.WaitVisible("#app", chromedp.ByQuery),
		chromedp.WaitVisible(`#crumbs button[aria-current="page"]`, chromedp.ByQuery),
	}
}

// Proxy is a reverse proxy in front of the daemon that counts chunk uploads
// and can fail them (Fault) or hold them (Hold) — the "failing server" and
// "interrupted upload" of the browser tests.
type Proxy struct {
	URL string

	mu         sync.Mutex
	Fault      func(n int) int // status to answer the n-th uploadChunk with (0: forward)
	hold       chan struct{}   // while non-nil, uploadChunk waits for it to close
	holdAfter  int             // chunk requests let through before holding
	chunkReqs  int
	ChunkBytes int64 // body bytes of uploadChunk requests the daemon answered 200
	chunkOK    int
	okSignal   chan int

	// WholeFault is Fault for the one-request upload (PUT file/upload);
	// WholeReqs and WholeOK count its requests and its 200s.
	WholeFault func(n int) int
	WholeReqs  int
	WholeOK    int
}

// isChunk reports a chunk upload: the API's, or a public link's (its page
// uploads through /s/TOKEN/api/chunk).
func isChunk(p string) bool {
	return strings.HasSuffix(p, "/file/uploadChunk") || strings.HasPrefix(p, "/s/") && strings.HasSuffix(p, "/api/chunk")
}

// NewProxy starts a proxy to target, closed at test cleanup.
func NewProxy(t testing.TB, target string) *Proxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{okSignal: make(chan int, 1024)}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		if isChunk(resp.Request.URL.Path) && resp.StatusCode == 200 {
			p.mu.Lock()
			p.chunkOK++
			p.ChunkBytes += resp.Request.ContentLength
			n := p.chunkOK
			p.mu.Unlock()
			p.okSignal <- n
		}
		if strings.HasSuffix(resp.Request.URL.Path, "/file/upload") && resp.StatusCode == 200 {
			p.mu.Lock()
			p.WholeOK++
			p.mu.Unlock()
		}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/file/upload") {
			p.mu.Lock()
			p.WholeReqs++
			status := 0
			if p.WholeFault != nil {
				status = p.WholeFault(p.WholeReqs)
			}
			p.mu.Unlock()
			if status != 0 {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				fmt.Fprintf(w, `{"error":"injected fault","code":"internal"}`)
				return
			}
		}
		if isChunk(r.URL.Path) {
			p.mu.Lock()
			p.chunkReqs++
			n := p.chunkReqs
			status := 0
			if p.Fault != nil {
				status = p.Fault(n)
			}
			var hold chan struct{}
			if p.hold != nil && n > p.holdAfter {
				hold = p.hold
			}
			p.mu.Unlock()
			if status != 0 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				fmt.Fprintf(w, `{"error":"injected fault","code":"internal"}`)
				return
			}
			if hold != nil {
				select {
				case <-hold:
				case <-r.Context().Done():
					return
				}
				if r.Context().Err() != nil {
					return // the client left while held (when it is seen in time)
				}
			}
		}
		rp.ServeHTTP(w, r)
	}))
	// Held uploads go on before the server closes: Close waits for every
	// active connection, and a test that failed while holding would hang
	// there (the browser, closed later, keeps them open).
	t.Cleanup(func() {
		p.Release()
		srv.Close()
	})
	p.URL = srv.URL
	return p
}

// Hold makes chunk uploads after the first n wait until Release.
func (p *Proxy) Hold(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold, p.holdAfter, p.chunkReqs = make(chan struct{}), n, 0
}

// Release lets held and further chunk uploads through.
func (p *Proxy) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hold != nil {
		close(p.hold)
		p.hold = nil
	}
}

// SetFault sets the fault function.
func (p *Proxy) SetFault(f func(n int) int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Fault, p.chunkReqs = f, 0
}

// WaitChunksOK waits until the daemon has accepted n chunk uploads in all.
func (p *Proxy) WaitChunksOK(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case got := <-p.okSignal:
			if got >= n {
				return
			}
		case <-deadline:
			t.Fatalf("the daemon did not accept %d chunks within %v", n, timeout)
		}
	}
}

// Counts returns the uploadChunk requests since the last Hold or SetFault,
// and the one-request uploads sent and accepted.
func (p *Proxy) Counts() (chunkReqs, wholeReqs, wholeOK int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.chunkReqs, p.WholeReqs, p.WholeOK
}

// SetWholeFault sets the one-request upload's fault function.
func (p *Proxy) SetWholeFault(f func(n int) int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.WholeFault = f
}

// Bytes is the chunk bytes the daemon accepted so far.
func (p *Proxy) Bytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ChunkBytes
}

// Chromium returns the browser's path: testutil.RequireTool, so that under
// CI=true a missing browser fails.
func Chromium(t testing.TB) string { return testutil.RequireTool(t, "chromium") }
