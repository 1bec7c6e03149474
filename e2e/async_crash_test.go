package e2e

import (
	"bytes"
	"io"
	"log"
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

	"netdisk/testutil"
)

// stallProxy forwards to the daemon but stops every async content answer
// after limit bytes (the agent behind it is mid-download for as long as the
// test wants), signalling stalled once.
type stallProxy struct {
	*httptest.Server
	stalled chan struct{}
	once    sync.Once
	release chan struct{}
}

func newStallProxy(t *testing.T, target string, limit int64) *stallProxy {
	u, _ := url.Parse(target)
	p := &stallProxy{stalled: make(chan struct{}), release: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(io.Discard, "", 0) // the stall ends in a cut body, by design
	rp.ModifyResponse = func(r *http.Response) error {
		if strings.HasPrefix(r.Request.URL.Path, "/api/v1/async/agent/content") && r.StatusCode/100 == 2 {
			r.Body = &stallBody{rc: r.Body, left: limit, p: p}
		}
		return nil
	}
	p.Server = httptest.NewServer(rp)
	t.Cleanup(func() { close(p.release); p.Server.CloseClientConnections(); p.Server.Close() })
	return p
}

type stallBody struct {
	rc   io.ReadCloser
	left int64
	p    *stallProxy
}

func (b *stallBody) Read(q []byte) (int, error) {
	if b.left <= 0 {
		b.p.once.Do(func() { close(b.p.stalled) })
		<-b.p.release
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(q)) > b.left {
		q = q[:b.left]
	}
	n, err := b.rc.Read(q)
	b.left -= int64(n)
	return n, err
}

func (b *stallBody) Close() error { return b.rc.Close() }

// An agent killed mid-download: its task ends Timeout, the other agent's
// Success; nothing half-written appears in the dead agent's target dir.
func TestAsyncAgentCrashMidDownload(t *testing.T) {
	e := start(t, "--async-window", "1s", "--async-tick", "100ms", "--async-recheck", "200ms", "--async-timeout", "12s")
	e.addUser("alice", "alice-pw")
	data := testutil.RandBytes(8 << 20)
	e.put("alice", "alice-pw", "/dav/big.bin", data)
	root := t.TempDir()
	proxy := newStallProxy(t, e.d.URL, 1<<20)

	crashy := e.startAgentVia("crashy", filepath.Join(root, "crashy"), filepath.Join(root, "cache-crashy"), proxy.URL)
	e.startAgent("steady", filepath.Join(root, "steady"), filepath.Join(root, "cache-steady"))

	a := e.asyncAdd("/big.bin", "crashy", "in")
	b := e.asyncAdd("/big.bin", "steady", "in")
	select {
	case <-proxy.stalled:
	case <-time.After(60 * time.Second):
		t.Fatalf("crashy never started downloading:\n%s", crashy.logs.String())
	}
	crashy.kill() // kill -9 mid-download
	waitFor(t, 60*time.Second, "both tasks to end", func() bool {
		return final(e.asyncStatus(a.TaskID).Status) && final(e.asyncStatus(b.TaskID).Status)
	})
	if st := e.asyncStatus(b.TaskID); st.Status != "Success" {
		t.Fatalf("steady: %s %s", st.Status, st.Message)
	}
	if st := e.asyncStatus(a.TaskID); st.Status != "Timeout" && st.Status != "Failed" {
		t.Fatalf("crashy: %s, want Timeout or Failed", st.Status)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "steady", "in", "big.bin")); !bytes.Equal(got, data) {
		t.Fatalf("steady's copy: %d bytes differ", len(got))
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "crashy", "in")); len(ents) != 0 {
		t.Fatalf("crashy's target dir holds %d entries: a half-written file is visible", len(ents))
	}
}

// The daemon killed while a job runs: restarted on the same data dir, it
// resumes the job from SQLite and the agent (started only now) gets it.
func TestAsyncDaemonRestartMidJob(t *testing.T) {
	e := start(t, "--async-window", "1s", "--async-tick", "100ms", "--async-recheck", "200ms")
	e.addUser("alice", "alice-pw")
	data := testutil.RandBytes(100000)
	e.put("alice", "alice-pw", "/dav/f.bin", data)
	task := e.asyncAddWaiting("/f.bin", "late", "x") // the agent is started only after the restart
	waitFor(t, 30*time.Second, "the job to run", func() bool { return e.asyncStatus(task.TaskID).Status == "Running" })
	e.d.Kill()
	e.d.Restart()
	if st := e.asyncStatus(task.TaskID); st.Status != "Running" {
		t.Fatalf("after restart: %s", st.Status)
	}
	root := t.TempDir()
	e.startAgent("late", filepath.Join(root, "late"), filepath.Join(root, "cache"))
	waitFor(t, 60*time.Second, "the task to succeed", func() bool { return e.asyncStatus(task.TaskID).Status == "Success" })
	if got, _ := os.ReadFile(filepath.Join(root, "late", "x", "f.bin")); !bytes.Equal(got, data) {
		t.Fatalf("delivered %d bytes differ", len(got))
	}
}
