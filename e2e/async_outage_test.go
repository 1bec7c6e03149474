package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"netdisk/testutil"
)

// reportProxy forwards to the daemon, holding the first agent report until
// released, and counts the reports and content fetches that pass.
type reportProxy struct {
	*httptest.Server
	held     chan struct{} // closed once the first report is held
	release  chan struct{} // closed by Release
	once     sync.Once
	reports  atomic.Int32
	contents atomic.Int32
}

func newReportProxy(t *testing.T, target string) *reportProxy {
	u, _ := url.Parse(target)
	p := &reportProxy{held: make(chan struct{}), release: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(io.Discard, "", 0)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/async/agent/report":
			if p.reports.Add(1) == 1 {
				close(p.held)
				<-p.release
			}
		case "/api/v1/async/agent/content":
			p.contents.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { p.Release(); p.Server.CloseClientConnections(); p.Server.Close() })
	return p
}

// Release lets the held report through.
func (p *reportProxy) Release() { p.once.Do(func() { close(p.release) }) }

func outcomeFiles(t *testing.T, state string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(state, "outcomes"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// Redis stops after the agent delivered the file and before its report got
// through: the agent keeps the outcome on disk and retries beyond five
// attempts; killed (kill -9) while Redis is still down and started again
// once Redis is back, it sends the kept outcome, without fetching the file a
// second time, and the task ends Success.
func TestAsyncOutcomeSurvivesRedisOutageAndAgentRestart(t *testing.T) {
	r := testutil.StartRedis(t)
	e := start(t, "--redis", r.URL, "--async-window", "1s", "--async-tick", "100ms", "--async-recheck", "200ms")
	e.addUser("alice", "alice-pw")
	data := testutil.RandBytes(300000)
	e.put("alice", "alice-pw", "/dav/f.bin", data)
	root := t.TempDir()
	dir, cache, state := filepath.Join(root, "dir"), filepath.Join(root, "cache"), filepath.Join(root, "state")
	proxy := newReportProxy(t, e.d.URL)
	first := e.runAgent("ag", proxy.URL, "--dir", dir, "--cache", cache, "--state", state)
	task := e.asyncAdd("/f.bin", "ag", "in")
	select {
	case <-proxy.held:
	case <-time.After(60 * time.Second):
		t.Fatalf("no report:\n%s", first.logs.String())
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "in", "f.bin")); !bytes.Equal(got, data) {
		t.Fatalf("delivered %d bytes differ", len(got))
	}
	if n := len(outcomeFiles(t, state)); n != 1 {
		t.Fatalf("%d outcomes kept before the report, want 1", n)
	}
	r.Stop()
	proxy.Release()
	// More attempts than a bounded retry (5) makes: the outcome is kept.
	waitFor(t, 60*time.Second, "six report attempts during the outage", func() bool { return proxy.reports.Load() >= 6 })
	first.kill()
	if n := len(outcomeFiles(t, state)); n != 1 {
		t.Fatalf("%d outcomes kept after the agent died, want 1", n)
	}
	r.Start()
	fetched := proxy.contents.Load()
	e.runAgent("ag", proxy.URL, "--dir", dir, "--cache", cache, "--state", state)
	waitFor(t, 60*time.Second, "the task to succeed", func() bool { return e.asyncStatus(task.TaskID).Status == "Success" })
	if n := proxy.contents.Load(); n != fetched {
		t.Fatalf("the restarted agent fetched the content again (%d fetches, was %d): its outcome was lost", n, fetched)
	}
	waitFor(t, 10*time.Second, "the kept outcome to be dropped", func() bool { return len(outcomeFiles(t, state)) == 0 })
	if got, _ := os.ReadFile(filepath.Join(dir, "in", "f.bin")); !bytes.Equal(got, data) {
		t.Fatalf("delivered %d bytes differ", len(got))
	}
}

// An item sent on an open work stream and not answered is sent again on
// that stream (the agent may have lost it or its answer), without the agent
// reconnecting.
func TestAsyncStreamReoffersUnanswered(t *testing.T) {
	e := startAsync(t) // recheck 200 ms: re-offered after 2 s
	e.addUser("alice", "alice-pw")
	e.put("alice", "alice-pw", "/dav/f.bin", []byte("payload"))
	req, _ := http.NewRequestWithContext(ctxFor(t), "GET", e.d.URL+"/api/v1/async/agent/events?agent=raw", nil)
	req.SetBasicAuth("alice", "alice-pw")
	resp, err := e.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	ids := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var w struct{ TaskID string }
				json.Unmarshal([]byte(d), &w)
				ids <- w.TaskID
			}
		}
		close(ids)
	}()
	task := e.asyncAdd("/f.bin", "raw", "in") // accepted: the open stream registered the agent
	seen := 0
	deadline := time.After(60 * time.Second)
	for seen < 2 {
		select {
		case id, ok := <-ids:
			if !ok {
				t.Fatal("the stream ended")
			}
			if id == task.TaskID {
				seen++
			}
		case <-deadline:
			t.Fatalf("the unanswered item came %d times on the open stream, want it again", seen)
		}
	}
}

// A target naming an agent that never ran is refused at once with one
// line, unless --wait-for-agent; a running delivery shows as
// "Downloading N%".
func TestAsyncUnknownAgentAndProgress(t *testing.T) {
	e := start(t, "--async-window", "1s", "--async-tick", "100ms", "--async-recheck", "200ms")
	e.addUser("alice", "alice-pw")
	data := testutil.RandBytes(8 << 20)
	e.put("alice", "alice-pw", "/dav/big.bin", data)
	cli := func(args ...string) (string, error) {
		cmd := exec.Command(testutil.Binary(t), append(args, "--server", e.d.URL, "--user", "alice", "--password", "alice-pw")...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := cli("async", "add", "/big.bin", "--agent", "typo", "--target-dir", "x")
	if err == nil || !strings.Contains(out, "typo") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("async add --agent typo: %v %q, want a one-line refusal naming it", err, out)
	}
	body, _ := json.Marshal(map[string]string{"path": "/big.bin", "agent": "typo", "targetDir": "x"})
	if st, b, _ := e.call("POST", "/api/v1/async/tasks", "alice", "alice-pw", body, map[string]string{"Content-Type": "application/json"}); st != http.StatusNotFound {
		t.Fatalf("API add for an unknown agent: %d %s, want 404", st, b)
	}
	if out, err := cli("async", "add", "/big.bin", "--agent", "later", "--target-dir", "x", "--wait-for-agent"); err != nil || !strings.HasPrefix(out, "AsyncDownloadTask:") {
		t.Fatalf("async add --wait-for-agent: %v %q", err, out)
	}

	root := t.TempDir()
	proxy := newStallProxy(t, e.d.URL, 3<<20)
	e.startAgentVia("slow", filepath.Join(root, "slow"), filepath.Join(root, "cache"), proxy.URL)
	task := e.asyncAdd("/big.bin", "slow", "in")
	select {
	case <-proxy.stalled:
	case <-time.After(60 * time.Second):
		t.Fatal("the agent never started downloading")
	}
	re := regexp.MustCompile(`^Downloading (\d+)%\tjob `)
	waitFor(t, 30*time.Second, "the status to show the progress", func() bool {
		out, err := cli("async", "status", task.TaskID)
		m := re.FindStringSubmatch(out)
		return err == nil && m != nil && m[1] != "0" && m[1] != "100"
	})
	st, b, _ := e.call("GET", "/api/v1/async/task?id="+queryEscape(task.TaskID), "alice", "alice-pw", nil, nil)
	var w struct {
		Status      string
		Bytes, Size int64
	}
	if err := json.Unmarshal(b, &w); err != nil || st != http.StatusOK || w.Status != "Downloading" || w.Size != int64(len(data)) || w.Bytes <= 0 || w.Bytes > w.Size {
		t.Fatalf("API status %d %s", st, b)
	}
}
