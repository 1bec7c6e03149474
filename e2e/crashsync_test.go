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
	hist     histLog
}

// histLog is what the history part of the workload (histWorkload) got to:
// which steps it sent and which the daemon acknowledged.
type histLog struct {
	tree                        map[string][]byte // the folder's files
	treeMade                    bool              // the folder and its files acknowledged
	deleteSent, deleteAcked     bool              // DELETE of the folder
	restoreSent, restoreAcked   bool              // its restore from the trash
	v1, v2                      []byte            // the versioned file's contents
	versioned                   bool              // both acknowledged
	vRestoreSent, vRestoreAcked bool              // v1 restored over v2
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
// one-request upload, parallel PUTs sharing a group commit, then the
// history's steps (histWorkload). It stops at
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
	return histWorkload(e, &log.hist, pass)
}

// histWorkload walks the history's durable steps: a folder deleted to the
// trash and restored from it, a file's earlier version restored.
func histWorkload(e *env, h *histLog, pass string) bool {
	h.tree = map[string][]byte{"/dir/x.txt": testutil.RandBytes(5000), "/dir/sub/y.bin": testutil.RandBytes(150 << 10)}
	h.v1, h.v2 = testutil.RandBytes(1500), testutil.RandBytes(2500)
	req := func(method, url string, body []byte, hdr map[string]string) ([]byte, bool) {
		resp, err := e.try(method, url, "alice", pass, bytes.NewReader(body), hdr)
		if err != nil {
			return nil, false
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return b, err == nil && resp.StatusCode >= 200 && resp.StatusCode < 300
	}
	jsonHdr := map[string]string{"Content-Type": "application/json"}
	for _, s := range []struct {
		method, url string
		body        []byte
	}{
		{"MKCOL", "/dav/dir", nil}, {"MKCOL", "/dav/dir/sub", nil},
		{"PUT", "/dav/dir/x.txt", h.tree["/dir/x.txt"]}, {"PUT", "/dav/dir/sub/y.bin", h.tree["/dir/sub/y.bin"]},
	} {
		if _, ok := req(s.method, s.url, s.body, nil); !ok {
			return false
		}
	}
	h.treeMade, h.deleteSent = true, true
	if _, ok := req("DELETE", "/dav/dir", nil, nil); !ok {
		return false
	}
	h.deleteAcked, h.restoreSent = true, true
	if _, ok := req("POST", "/api/v1/trash/restore", []byte(`{"path":"/dir"}`), jsonHdr); !ok {
		return false
	}
	h.restoreAcked = true
	for _, b := range [][]byte{h.v1, h.v2} {
		if _, ok := req("PUT", "/dav/v.txt", b, nil); !ok {
			return false
		}
	}
	h.versioned = true
	body, ok := req("GET", "/api/v1/versions?path=/v.txt", nil, nil)
	var l apitype.VersionList
	if !ok || json.Unmarshal(body, &l) != nil || len(l.Versions) != 1 {
		return false
	}
	h.vRestoreSent = true
	if _, ok := req("POST", "/api/v1/versions/restore", fmt.Appendf(nil, `{"path":"/v.txt","version":%d}`, l.Versions[0].ID), jsonHdr); !ok {
		return false
	}
	h.vRestoreAcked = true
	return true
}

// checkHistorySteps: after a crash anywhere in histWorkload, the folder is
// either whole in place or whole in the trash (one item, which restores
// it), never both nor torn; the versioned file holds v2 with v1 as its
// version or, once the restore may have run, v1 with v2 as its version;
// and fsck finds nothing wrong.
func checkHistorySteps(t *testing.T, e *env, n int, h histLog, pass string) {
	t.Helper()
	if h.treeMade {
		var items []apitype.TrashItem
		st, body, _ := e.call("GET", "/api/v1/trash?limit=1000", "alice", pass, nil, nil)
		var l apitype.TrashList
		if st != http.StatusOK || json.Unmarshal(body, &l) != nil {
			t.Fatalf("crash after step %d: trash: %d %s", n, st, body)
		}
		for _, it := range l.Items {
			if it.Path == "/dir" {
				items = append(items, it)
			}
		}
		st, _, _ = e.call("GET", "/dav/dir/x.txt", "alice", pass, nil, nil)
		inPlace := st == http.StatusOK
		switch {
		case inPlace && len(items) == 0:
			if h.deleteAcked && !h.restoreSent {
				t.Fatalf("crash after step %d: the acknowledged DELETE of /dir is undone", n)
			}
		case !inPlace && len(items) == 1:
			if !h.deleteSent || h.restoreAcked {
				t.Fatalf("crash after step %d: /dir is in the trash (delete sent %v, restore acknowledged %v)", n, h.deleteSent, h.restoreAcked)
			}
			if want := int64(len(h.tree["/dir/x.txt"]) + len(h.tree["/dir/sub/y.bin"])); items[0].Size != want {
				t.Fatalf("crash after step %d: the trash item of /dir holds %d bytes, want %d", n, items[0].Size, want)
			}
			// The item is whole: restoring it brings the tree back.
			body, _ := json.Marshal(apitype.TrashRestore{ID: items[0].ID})
			if st, b, _ := e.call("POST", "/api/v1/trash/restore", "alice", pass, body, map[string]string{"Content-Type": "application/json"}); st != http.StatusOK {
				t.Fatalf("crash after step %d: restoring /dir after the crash: %d %s", n, st, b)
			}
		default:
			t.Fatalf("crash after step %d: /dir in place %v (GET %d) with %d trash items at /dir", n, inPlace, st, len(items))
		}
		for p, want := range h.tree {
			if st, got, _ := e.call("GET", "/dav"+p, "alice", pass, nil, nil); st != http.StatusOK || !bytes.Equal(got, want) {
				t.Fatalf("crash after step %d: %s after the restore: %d, %d bytes, want %d", n, p, st, len(got), len(want))
			}
		}
	}
	if h.versioned {
		st, cur, _ := e.call("GET", "/dav/v.txt", "alice", pass, nil, nil)
		restored := st == http.StatusOK && bytes.Equal(cur, h.v1)
		if st != http.StatusOK || !restored && !bytes.Equal(cur, h.v2) {
			t.Fatalf("crash after step %d: /v.txt is %d with %d bytes, neither v1 nor v2", n, st, len(cur))
		}
		if restored && !h.vRestoreSent || !restored && h.vRestoreAcked {
			t.Fatalf("crash after step %d: /v.txt restored %v, restore sent %v, acknowledged %v", n, restored, h.vRestoreSent, h.vRestoreAcked)
		}
		st, body, _ := e.call("GET", "/api/v1/versions?path=/v.txt", "alice", pass, nil, nil)
		var l apitype.VersionList
		if st != http.StatusOK || json.Unmarshal(body, &l) != nil || len(l.Versions) != 1 {
			t.Fatalf("crash after step %d: versions of /v.txt: %d %s, want one", n, st, body)
		}
		want := h.v1
		if restored {
			want = h.v2
		}
		st, got, _ := e.call("GET", fmt.Sprintf("/api/v1/versions/content?path=/v.txt&version=%d", l.Versions[0].ID), "alice", pass, nil, nil)
		if st != http.StatusOK || !bytes.Equal(got, want) {
			t.Fatalf("crash after step %d: the version of /v.txt (restored %v): %d, %d bytes, want %d", n, restored, st, len(got), len(want))
		}
	}
	var f apitype.FsckResult
	e.admin("POST", "/api/v1/admin/fsck", &f)
	if len(f.Problems) != 0 {
		t.Fatalf("crash after step %d: fsck: %+v", n, f.Problems)
	}
}

// TestCrashAtEveryFsync kills the real daemon (SIGKILL, from inside, via the
// crashpoint hook) right after its 1st, 2nd, … durable step of a workload,
// one run per step until the workload completes, restarts it each time and
// checks that every file acknowledged before the crash reads back exactly,
// that a file whose write was cut reads back as one whole version, that
// each file's versions are exactly the contents it held before, that a
// folder deleted or restored and a version restored are in the old state
// or the new one, and that fsck is clean.
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
		checkHistorySteps(t, e, n, log.hist, pass)
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
