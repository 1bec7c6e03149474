package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"netdisk/internal/crashpoint"
	"netdisk/testutil"
)

// crashLog records what a workload asked for and what the daemon
// acknowledged, per path.
type crashLog struct {
	mu       sync.Mutex
	acked    map[string][]byte   // the last acknowledged content
	inFlight map[string][][]byte // contents sent after the last acknowledgement
}

func (l *crashLog) try(path string, b []byte) {
	l.mu.Lock()
	l.inFlight[path] = append(l.inFlight[path], b)
	l.mu.Unlock()
}

func (l *crashLog) ack(path string, b []byte) {
	l.mu.Lock()
	l.acked[path] = b
	l.inFlight[path] = nil
	l.mu.Unlock()
}

// crashWorkload writes through every durable path of the daemon: small files
// kept inline, multi-chunk files as blobs, an overwrite, the upload API's
// one-request upload and parallel PUTs sharing a group commit. It stops at
// the first failure (the daemon killed itself) and reports whether it ran to
// the end.
func crashWorkload(t *testing.T, e *env, log *crashLog, pass string) bool {
	type op struct {
		path string
		b    []byte
		api  bool
	}
	seq := []op{
		{"/a.txt", testutil.RandBytes(4096), false},
		{"/b.bin", testutil.RandBytes(200 << 10), false}, // 4 chunks of 64 KiB
		{"/a.txt", testutil.RandBytes(3000), false},      // overwrite (204)
		{"/c.bin", testutil.RandBytes(100 << 10), true},  // one-request API upload
		{"/d.txt", testutil.RandBytes(10), true},
	}
	send := func(o op) bool {
		log.try(o.path, o.b)
		url := "/dav" + o.path
		if o.api {
			url = "/api/v1/file/upload?path=" + o.path
		}
		resp, err := e.try("PUT", url, "alice", pass, bytes.NewReader(o.b), nil)
		if err != nil {
			return false // the daemon is gone: no answer, no acknowledgement
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if st := resp.StatusCode; st == http.StatusOK || st == http.StatusCreated || st == http.StatusNoContent {
			log.ack(o.path, o.b)
			return true
		}
		return false
	}
	for _, o := range seq {
		if !send(o) {
			return false
		}
	}
	var wg sync.WaitGroup
	ok := make([]bool, 6)
	for i := range ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok[i] = send(op{fmt.Sprintf("/p%d.txt", i), testutil.RandBytes(2000 + i), false})
		}()
	}
	wg.Wait()
	for _, v := range ok {
		if !v {
			return false
		}
	}
	return true
}

// TestCrashAtEveryFsync kills the real daemon (SIGKILL, from inside, via the
// crashpoint hook) right after its 1st, 2nd, … durable step of a workload,
// one run per step until the workload completes, restarts it each time and
// checks that every file acknowledged before the crash reads back exactly,
// and that a file whose write was cut reads back as one whole version.
func TestCrashAtEveryFsync(t *testing.T) {
	const pass = "alice-pass-123"
	for n := 1; ; n++ {
		if n > 200 {
			t.Fatal("the workload never completed: more than 200 durable steps?")
		}
		t.Setenv(crashpoint.EnvVar, "") // setting up: no crash
		e := start(t, "--chunk-size", "64KiB", "--gc-interval", "0")
		e.addUser("alice", pass)
		e.d.Stop()
		t.Setenv(crashpoint.EnvVar, fmt.Sprint(n))
		e.d.Restart()
		log := &crashLog{acked: map[string][]byte{}, inFlight: map[string][][]byte{}}
		completed := crashWorkload(t, e, log, pass)
		t.Setenv(crashpoint.EnvVar, "")
		if completed {
			e.d.Stop()
		}
		e.d.Restart() // after Kill (crashed) or Stop
		for p, want := range log.acked {
			st, got, _ := e.call("GET", "/dav"+p, "alice", pass, nil, nil)
			if st != http.StatusOK {
				t.Fatalf("crash after step %d: acknowledged %s is %d", n, p, st)
			}
			if !bytes.Equal(got, want) && !oneOf(got, log.inFlight[p]) {
				t.Fatalf("crash after step %d: acknowledged %s reads back %d bytes, neither the acknowledged version nor a later whole one", n, p, len(got))
			}
		}
		for p, tries := range log.inFlight {
			if _, acked := log.acked[p]; acked || len(tries) == 0 {
				continue
			}
			st, got, _ := e.call("GET", "/dav"+p, "alice", pass, nil, nil)
			if st != http.StatusNotFound && !(st == http.StatusOK && oneOf(got, tries)) {
				t.Fatalf("crash after step %d: unacknowledged %s is %d with %d bytes: a torn version", n, p, st, len(got))
			}
		}
		e.d.Stop()
		if completed {
			t.Logf("the workload completed with the crash set after step %d: every earlier step was crashed at", n)
			return
		}
	}
}

func oneOf(b []byte, set [][]byte) bool {
	for _, s := range set {
		if bytes.Equal(b, s) {
			return true
		}
	}
	return false
}
