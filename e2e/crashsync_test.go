package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"netdisk/apitype"
	"netdisk/internal/crashpoint"
	"netdisk/testutil"
)

// crashLog records what a workload asked for and what the daemon
// acknowledged, per path.
type crashLog struct {
	mu       sync.Mutex
	acked    map[string][]byte   // the last acknowledged content
	inFlight map[string][][]byte // contents sent after the last acknowledgement
	sent     map[string][][]byte // every content sent, in order (the history a path may have)
}

func (l *crashLog) try(path string, b []byte) {
	l.mu.Lock()
	l.inFlight[path] = append(l.inFlight[path], b)
	if l.sent == nil {
		l.sent = map[string][][]byte{}
	}
	l.sent[path] = append(l.sent[path], b)
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
// that a file whose write was cut reads back as one whole version, and that
// each file's versions are exactly the contents it held before.
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
		for p := range log.sent {
			checkHistory(t, e, n, p, pass, log.sent[p])
		}
		e.d.Stop()
		if completed {
			t.Logf("the workload completed with the crash set after step %d: every earlier step was crashed at", n)
			return
		}
	}
}

// checkHistory: the file at p holds one of the contents sent to it, and its
// versions are exactly the contents it held before, newest first — the
// content and its history were committed together or not at all.
func checkHistory(t *testing.T, e *env, n int, p, pass string, sent [][]byte) {
	t.Helper()
	st, cur, _ := e.call("GET", "/dav"+p, "alice", pass, nil, nil)
	if st == http.StatusNotFound {
		return
	}
	idx := -1
	for i, b := range sent {
		if bytes.Equal(b, cur) {
			idx = i
		}
	}
	if st != http.StatusOK || idx < 0 {
		t.Fatalf("crash after step %d: %s is %d with content never sent", n, p, st)
	}
	st, body, _ := e.call("GET", "/api/v1/versions?path="+p, "alice", pass, nil, nil)
	var l apitype.VersionList
	if st != http.StatusOK || json.Unmarshal(body, &l) != nil {
		t.Fatalf("crash after step %d: versions of %s: %d %s", n, p, st, body)
	}
	if len(l.Versions) != idx {
		t.Fatalf("crash after step %d: %s holds content %d of those sent with %d versions, want %d", n, p, idx+1, len(l.Versions), idx)
	}
	for i, v := range l.Versions {
		st, got, _ := e.call("GET", fmt.Sprintf("/api/v1/versions/content?path=%s&version=%d", p, v.ID), "alice", pass, nil, nil)
		if want := sent[idx-1-i]; st != http.StatusOK || !bytes.Equal(got, want) {
			t.Fatalf("crash after step %d: version %d of %s: %d, %d bytes; want the content it replaced (%d bytes)", n, i, p, st, len(got), len(want))
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
