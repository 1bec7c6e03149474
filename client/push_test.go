package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/chunker"
	"netdisk/testutil"
)

// End-to-end: the real daemon (64 KiB chunks so files stay small), reached
// directly or through faultProxy.

const testChunk = 64 << 10

func startDaemon(t *testing.T, extra ...string) *testutil.Daemon {
	t.Helper()
	return testutil.StartDaemon(t, append([]string{"--chunk-size", "64KiB"}, extra...)...)
}

func writeRandom(t *testing.T, dir, name string, seed uint64, n int) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// fastRetries keeps injected faults from slowing tests: real sleeps, short.
func fastRetries() chunker.Options {
	return chunker.Options{Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Retries: 8}
}

type eventLog struct {
	mu sync.Mutex
	ev []PushEvent
}

func (l *eventLog) on(e PushEvent) { l.mu.Lock(); l.ev = append(l.ev, e); l.mu.Unlock() }

func (l *eventLog) count(k chunker.EventKind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.ev {
		if e.Event != nil && e.Event.Kind == k {
			n++
		}
	}
	return n
}

// wantPulled pulls remote as c and fails t unless it reads back as want.
func wantPulled(t *testing.T, c *Client, remote string, want []byte) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "pulled")
	if _, err := c.Pull(context.Background(), remote, out, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s as %s pulls %d bytes unlike the %d written", remote, c.User, len(got), len(want))
	}
}

func TestPushNewFileThenPull(t *testing.T) {
	d := startDaemon(t)
	c := New(d.URL, "admin", d.AdminPass)
	local, data := writeRandom(t, t.TempDir(), "a.bin", 1, 20*testChunk+123)
	var log eventLog
	res, err := c.Push(context.Background(), local, "/dir/a.bin", PushOptions{SmallFileLimit: -1, OnEvent: log.on})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 1 || res.BytesSent != int64(len(data)) || res.Instant != 0 {
		t.Fatalf("%+v", res)
	}
	if log.count(chunker.ChunkHashed) != 21 || log.count(chunker.QueueDrained) != 1 || log.count(chunker.Merged) != 1 {
		t.Fatalf("events: %d hashed, %d drained, %d merged", log.count(chunker.ChunkHashed), log.count(chunker.QueueDrained), log.count(chunker.Merged))
	}
	n, err := c.Stat(context.Background(), "/dir/a.bin")
	if err != nil || n.Size != int64(len(data)) {
		t.Fatalf("stat %+v %v", n, err)
	}
	wantPulled(t, c, "/dir/a.bin", data)
}

func TestPullResumesFromPart(t *testing.T) {
	d := startDaemon(t)
	c := New(d.URL, "admin", d.AdminPass)
	local, data := writeRandom(t, t.TempDir(), "a.bin", 2, 10*testChunk+5)
	if _, err := c.Push(context.Background(), local, "/a.bin", PushOptions{SmallFileLimit: -1}); err != nil {
		t.Fatal(err)
	}
	n, _ := c.Stat(context.Background(), "/a.bin")
	out := filepath.Join(t.TempDir(), "a.out")
	prefix := 3*testChunk + 17
	os.WriteFile(out+PartSuffix, data[:prefix], 0o644)
	os.WriteFile(out+PartSuffix+".etag", []byte(`"`+n.FileHash+`"`), 0o644)
	res, err := c.Pull(context.Background(), "/a.bin", out, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed != int64(prefix) || res.Bytes != int64(len(data)-prefix) {
		t.Fatalf("resumed %d received %d, want %d and %d", res.Resumed, res.Bytes, prefix, len(data)-prefix)
	}
	got, _ := os.ReadFile(out)
	if !bytes.Equal(got, data) {
		t.Fatal("resumed pull differs")
	}
	if _, err := os.Stat(out + PartSuffix); !os.IsNotExist(err) {
		t.Fatalf(".part left behind: %v", err)
	}

	// A corrupt part (same etag, wrong bytes) is caught by the hash check.
	bad := append([]byte(nil), data[:prefix]...)
	bad[5] ^= 0xff
	out2 := filepath.Join(t.TempDir(), "b.out")
	os.WriteFile(out2+PartSuffix, bad, 0o644)
	os.WriteFile(out2+PartSuffix+".etag", []byte(`"`+n.FileHash+`"`), 0o644)
	if _, err := c.Pull(context.Background(), "/a.bin", out2, PullOptions{}); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("corrupt part: err %v", err)
	}
	if _, err := os.Stat(out2); !os.IsNotExist(err) {
		t.Fatal("a corrupt download was renamed into place")
	}
}

func TestPushThroughFaultyProxy(t *testing.T) {
	d := startDaemon(t)
	p := newFaultProxy(t, d.URL)
	p.setDelay(20 * time.Millisecond)
	p.setFault(func(n int) string {
		switch {
		case n%5 == 0:
			return "drop"
		case n%3 == 0:
			return "500"
		case n%7 == 0:
			return "delay"
		}
		return ""
	})
	c := New(p.URL, "admin", d.AdminPass)
	local, data := writeRandom(t, t.TempDir(), "f.bin", 3, 30*testChunk)
	var log eventLog
	res, err := c.Push(context.Background(), local, "/f.bin", PushOptions{SmallFileLimit: -1, OnEvent: log.on, Pipeline: fastRetries()})
	if err != nil {
		t.Fatal(err)
	}
	reqs, ok, _ := p.stats()
	if log.count(chunker.ChunkRetry) == 0 || reqs <= 30 || ok != 30 || res.BytesSent != int64(len(data)) {
		t.Fatalf("retries %d, chunk requests %d (ok %d), %+v", log.count(chunker.ChunkRetry), reqs, ok, res)
	}
	if log.count(chunker.QueueAborted) != 0 || log.count(chunker.QueueDrained) != 1 {
		t.Fatal("aborted or not drained under recoverable faults")
	}
	wantPulled(t, New(d.URL, "admin", d.AdminPass), "/f.bin", data)
}

func TestPushAbortsThenResumes(t *testing.T) {
	d := startDaemon(t)
	p := newFaultProxy(t, d.URL)
	p.setFault(breakAfter(6))
	c := New(p.URL, "admin", d.AdminPass)
	local, data := writeRandom(t, t.TempDir(), "f.bin", 4, 24*testChunk)
	var log eventLog
	po := fastRetries()
	po.Retries = 2
	_, err := c.Push(context.Background(), local, "/f.bin", PushOptions{SmallFileLimit: -1, Concurrency: 1, OnEvent: log.on, Pipeline: po})
	if !errors.Is(err, chunker.ErrAborted) || log.count(chunker.QueueAborted) != 1 || log.count(chunker.Merged) != 0 {
		t.Fatalf("err %v, aborted %d, merged %d", err, log.count(chunker.QueueAborted), log.count(chunker.Merged))
	}
	if p.calls("/api/v1/file/merge") != 0 {
		t.Fatal("merge called after a failure")
	}
	if _, err := c.Stat(context.Background(), "/f.bin"); StatusOf(err) != http.StatusNotFound {
		t.Fatalf("file visible after an aborted upload: %v", err)
	}
	ok, held := p.uniqueOK()
	p.reset()
	p.setFault(nil)
	res, err := c.Push(context.Background(), local, "/f.bin", PushOptions{SmallFileLimit: -1, Pipeline: fastRetries()})
	if err != nil {
		t.Fatal(err)
	}
	again, sentIdx := p.uniqueOK()
	if want := int64(len(data) - ok*testChunk); res.BytesSent != want || again != 24-ok {
		t.Fatalf("resume sent %d bytes, want %d; chunks held before %v, sent now %v", res.BytesSent, want, held, sentIdx)
	}
	for _, i := range sentIdx {
		if slices.Contains(held, i) {
			t.Fatalf("chunk %s sent again on resume", i)
		}
	}
	wantPulled(t, c, "/f.bin", data)
}

func TestInstantUploadOfAnotherUsersContent(t *testing.T) {
	// Shared mode: one other owner is enough for the server to offer a proof.
	d := startDaemon(t, "--instant-upload=shared")
	admin := New(d.URL, "admin", d.AdminPass)
	if _, err := admin.AdminAddUser(context.Background(), apitype.NewUser{Name: "bob", Password: "bob-pass-123"}); err != nil {
		t.Fatal(err)
	}
	local, data := writeRandom(t, t.TempDir(), "f.bin", 5, 12*testChunk+9)
	if _, err := admin.Push(context.Background(), local, "/f.bin", PushOptions{SmallFileLimit: -1}); err != nil {
		t.Fatal(err)
	}
	p := newFaultProxy(t, d.URL)
	bob := New(p.URL, "bob", "bob-pass-123")
	var log eventLog
	res, err := bob.Push(context.Background(), local, "/mine.bin", PushOptions{SmallFileLimit: -1, OnEvent: log.on})
	if err != nil {
		t.Fatal(err)
	}
	_, _, sent := p.stats()
	if sent != 0 || res.BytesSent != 0 {
		t.Fatalf("%d chunk bytes sent for content the server holds", sent)
	}
	if p.calls("/api/v1/file/prove") == 0 {
		t.Fatal("no proof answered: another user's content must be proved")
	}
	if log.count(chunker.InstantUpload)+log.count(chunker.Merged) != 1 {
		t.Fatal("neither instant upload nor merge")
	}
	wantPulled(t, New(d.URL, "bob", "bob-pass-123"), "/mine.bin", data)
}

// The real binary is killed with SIGKILL in the middle of a push; the next
// push sends only what the daemon did not have yet. Ctrl-C (SIGINT) exits 130.
func TestCLIPushResumesAfterKill(t *testing.T) {
	d := startDaemon(t)
	p := newFaultProxy(t, d.URL)
	p.setDelay(30 * time.Millisecond)
	p.setFault(func(int) string { return "delay" })
	local, data := writeRandom(t, t.TempDir(), "f.bin", 6, 40*testChunk)
	bin := testutil.Binary(t)
	push := func() *exec.Cmd {
		cmd := exec.Command(bin, "push", "--chunked", "--concurrency", "1", "--server", p.URL, "--user", "admin", "--password", d.AdminPass, local, "/f.bin")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	waitChunks := func(n int) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, ok, _ := p.stats(); ok >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %d chunks uploaded in time", n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	cmd := push()
	waitChunks(5)
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("after SIGINT: %v, want exit 130", err)
	}

	cmd = push()
	waitChunks(12)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	ok, okIdx := p.uniqueOK()

	p.reset()
	p.setFault(nil)
	cmd = push()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("final push: %v\n%s", err, cmd.Stdout)
	}
	_, _, sent := p.stats()
	_, again := p.uniqueOK()
	before := map[string]bool{}
	for _, i := range okIdx {
		before[i] = true
	}
	for _, i := range again {
		if before[i] {
			t.Errorf("chunk %s sent again after the kill (held before: %v)", i, okIdx)
		}
	}
	// Bytes include retries of requests the proxy failed to forward. A chunk
	// the server recorded just before the kill, whose answer never made it
	// back through the proxy, is held without being in okIdx: so the resumed
	// run may send fewer than 40-ok chunks, never more.
	if sent >= int64(len(data)) || len(again) > 40-ok {
		t.Fatalf("resumed push sent %d bytes of %d, accepted %d chunks (%d held before)", sent, len(data), len(again), ok)
	}
	t.Logf("first runs: %d chunks; resumed run sent %d of %d bytes", ok, sent, len(data))
	wantPulled(t, New(d.URL, "admin", d.AdminPass), "/f.bin", data)
}

func TestCLIErrors(t *testing.T) {
	d := startDaemon(t)
	admin := New(d.URL, "admin", d.AdminPass)
	if _, err := admin.AdminAddUser(context.Background(), apitype.NewUser{Name: "carol", Password: "carol-pass-1", Quota: 100 << 10}); err != nil {
		t.Fatal(err)
	}
	local, _ := writeRandom(t, t.TempDir(), "f.bin", 7, 300<<10)
	bin := testutil.Binary(t)
	run := func(args ...string) (string, int) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"push", "--server", d.URL, "--user", "carol", "--password", "carol-pass-1", local}, "quota exceeded: 100 KiB free, 300 KiB needed"},
		{[]string{"push", "--server", d.URL, "--user", "carol", "--password", "nope", local}, "wrong user name or password"},
		{[]string{"ls", "--server", "127.0.0.1:1", "--user", "carol", "--password", "x"}, "unreachable"},
	} {
		out, code := run(tc.args...)
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, output %q, want %q", tc.args[0:1], code, out, tc.want)
		}
		last := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
		if !strings.HasPrefix(last, "netdisk: ") || !strings.Contains(last, tc.want) {
			t.Errorf("last line %q is not a one-line error", last)
		}
	}
}

func TestPushDirectoryThenPullIt(t *testing.T) {
	d := startDaemon(t)
	c := New(d.URL, "admin", d.AdminPass)
	src := filepath.Join(t.TempDir(), "tree")
	os.MkdirAll(filepath.Join(src, "a", "b"), 0o755)
	os.MkdirAll(filepath.Join(src, "empty"), 0o755)
	want := map[string][]byte{}
	for i, name := range []string{"top.txt", "a/x.bin", "a/b/y.bin", "a/b/z.txt"} {
		_, b := writeRandom(t, src, name, uint64(20+i), (i+1)*50000)
		want[name] = b
	}
	// Small files go whole; a low limit sends the larger ones in chunks.
	res, err := c.Push(context.Background(), src, "/", PushOptions{SmallFileLimit: 120000})
	if err != nil || res.Files != 4 || res.Failed != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	if n, err := c.Stat(context.Background(), "/tree/empty"); err != nil || !n.IsDir {
		t.Fatalf("empty dir: %+v %v", n, err)
	}
	out := filepath.Join(t.TempDir(), "copy")
	if _, err := c.Pull(context.Background(), "/tree/", out, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%s differs after push+pull: %v", name, err)
		}
	}
	if st, err := os.Stat(filepath.Join(out, "empty")); err != nil || !st.IsDir() {
		t.Fatalf("empty dir not pulled: %v", err)
	}
}

func TestCLIPushJSONEvents(t *testing.T) {
	d := startDaemon(t)
	local, _ := writeRandom(t, t.TempDir(), "f.bin", 30, 5*testChunk)
	out, err := exec.Command(testutil.Binary(t), "push", "--json", "--chunked", "--server", d.URL, "--user", "admin", "--password", d.AdminPass, local, "/f.bin").Output()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var last map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if pe, ok := m["pipeline"].(map[string]any); ok {
			kinds = append(kinds, pe["event"].(string))
		}
		last = m
	}
	if last["type"] != "summary" || last["files"] != float64(1) || last["bytesSent"] != float64(5*testChunk) {
		t.Fatalf("summary %v", last)
	}
	joined := strings.Join(kinds, " ")
	for _, k := range []string{"ChunkHashed", "AllChunksHashed", "FileHashed", "QueueDrained", "Merged"} {
		if !strings.Contains(joined, k) {
			t.Fatalf("no %s in %s", k, joined)
		}
	}
}

// A push interrupted, then resumed after the local file changed in the
// middle: the resumed session's merge fails (its chunks are the old bytes),
// which is reported as MergeFailed (and not followed by a second
// QueueDrained); every chunk is then re-checked by hash in a fresh session and
// only the changed one is sent again. The result is the new content.
// Shared mode: the re-check finds the abandoned session's chunks by proof;
// in private mode nobody holds them once that session is gone, so they are
// sent again (docs/API.md, "Instant upload and privacy").
func TestPushResumedAfterLocalChange(t *testing.T) {
	d := startDaemon(t, "--instant-upload=shared")
	p := newFaultProxy(t, d.URL)
	p.setFault(breakAfter(8))
	c := New(p.URL, "admin", d.AdminPass)
	local, data := writeRandom(t, t.TempDir(), "f.bin", 40, 24*testChunk+100)
	po := fastRetries()
	po.Retries = 1
	if _, err := c.Push(context.Background(), local, "/f.bin", PushOptions{SmallFileLimit: -1, Concurrency: 1, Pipeline: po}); !errors.Is(err, chunker.ErrAborted) {
		t.Fatalf("first push: %v, want an abort", err)
	}
	_, held := p.uniqueOK()
	if len(held) == 0 {
		t.Fatal("no chunk held after the first push")
	}
	// Which chunks got through before the break depends on the order the
	// hashing workers finished in: change one of those the session holds.
	changed := held[len(held)/2]
	k, err := strconv.Atoi(changed)
	if err != nil {
		t.Fatal(err)
	}
	data[k*testChunk+testChunk/2] ^= 0xff
	data[k*testChunk+testChunk/2+1] ^= 0xff
	if err := os.WriteFile(local, data, 0o644); err != nil {
		t.Fatal(err)
	}
	p.reset()
	p.setFault(nil)
	var log eventLog
	res, err := c.Push(context.Background(), local, "/f.bin", PushOptions{SmallFileLimit: -1, OnEvent: log.on, Pipeline: fastRetries()})
	if err != nil {
		t.Fatal(err)
	}
	_, sent := p.uniqueOK()
	var resent []string
	for _, i := range sent {
		if slices.Contains(held, i) {
			resent = append(resent, i)
		}
	}
	if !slices.Equal(resent, []string{changed}) {
		t.Fatalf("chunks sent again: %v, want only the changed chunk %s (held before: %v, sent now: %v)", resent, changed, held, sent)
	}
	if want := 25 - len(held) + 1; len(sent) != want {
		t.Fatalf("sent %d chunk requests (%v), want %d: the missing chunks once and chunk %s", len(sent), sent, want, changed)
	}
	if log.count(chunker.QueueDrained) != 1 || log.count(chunker.MergeFailed) != 1 || log.count(chunker.Merged) != 1 || log.count(chunker.QueueAborted) != 0 {
		t.Fatalf("events: %d QueueDrained, %d MergeFailed, %d Merged, %d QueueAborted; want 1, 1, 1, 0",
			log.count(chunker.QueueDrained), log.count(chunker.MergeFailed), log.count(chunker.Merged), log.count(chunker.QueueAborted))
	}
	if log.count(chunker.ChunkHashed) != 25 {
		t.Fatalf("%d chunks hashed, want 25: the re-check uses the hashes already computed", log.count(chunker.ChunkHashed))
	}
	t.Logf("held before %v; resumed push sent %v (%d bytes)", held, sent, res.BytesSent)
	wantPulled(t, New(d.URL, "admin", d.AdminPass), "/f.bin", data)
}

// A small file (one request) survives a 500 and a dropped connection: the
// request is retried with backoff; no other call is made.
func TestPushSmallFileRetries(t *testing.T) {
	d := startDaemon(t)
	p := newFaultProxy(t, d.URL)
	p.setUploadFault(func(n int) string {
		switch n {
		case 1:
			return "500"
		case 2:
			return "drop"
		}
		return ""
	})
	c := New(p.URL, "admin", d.AdminPass)
	local, data := writeRandom(t, t.TempDir(), "s.bin", 50, 100<<10)
	var log eventLog
	res, err := c.Push(context.Background(), local, "/s.bin", PushOptions{OnEvent: log.on, Pipeline: fastRetries()})
	if err != nil {
		t.Fatalf("a small file failed on recoverable faults: %v", err)
	}
	reqs, _ := p.uploads()
	if reqs != 3 || log.count(chunker.ChunkRetry) != 2 || res.Files != 1 || res.Instant != 0 || res.BytesSent != int64(len(data)) {
		t.Fatalf("%d one-request uploads, %d retries, %+v; want 3 and 2", reqs, log.count(chunker.ChunkRetry), res)
	}
	if calls := p.calls("/api/v1/file/init") + p.calls("/api/v1/file/patchHash") + p.calls("/api/v1/file/uploadChunk"); calls != 0 {
		t.Fatalf("%d session calls beside the one-request upload, want 0", calls)
	}
	wantPulled(t, New(d.URL, "admin", d.AdminPass), "/s.bin", data)

	// A 4xx is final: a file over the user's quota fails at once.
	if _, err := New(d.URL, "admin", d.AdminPass).AdminAddUser(context.Background(), apitype.NewUser{Name: "dan", Password: "dan-pass-123", Quota: 50 << 10}); err != nil {
		t.Fatal(err)
	}
	p.reset()
	p.setUploadFault(nil)
	log = eventLog{}
	dan := New(p.URL, "dan", "dan-pass-123")
	if _, err := dan.Push(context.Background(), local, "/s.bin", PushOptions{OnEvent: log.on, Pipeline: fastRetries()}); StatusOf(err) != http.StatusInsufficientStorage {
		t.Fatalf("over quota: %v, want 507", err)
	}
	if reqs, _ := p.uploads(); reqs != 1 || log.count(chunker.ChunkRetry) != 0 {
		t.Fatalf("over quota: %d uploads, %d retries; want 1 and none", reqs, log.count(chunker.ChunkRetry))
	}
}

// sessionCalls counts the calls of the chunked protocol the proxy saw.
func sessionCalls(p *faultProxy) int {
	n := 0
	for _, c := range []string{"init", "patchHash", "prove", "uploadChunk", "merge", "session"} {
		n += p.calls("/api/v1/file/" + c)
	}
	return n
}

// A small file is one request carrying its file hash: content its user
// already holds is committed without a byte crossing the wire (Expect:
// 100-continue), content the server lacks, or that only another user holds,
// goes in that one request (the answer never tells a user what others hold).
func TestPushSmallFileHashFirst(t *testing.T) {
	d := startDaemon(t, "--instant-upload=shared") // bob's copy is proved, not sent
	p := newFaultProxy(t, d.URL)
	admin := New(p.URL, "admin", d.AdminPass)
	if _, err := admin.AdminAddUser(context.Background(), apitype.NewUser{Name: "bob", Password: "bob-pass-123"}); err != nil {
		t.Fatal(err)
	}
	local, data := writeRandom(t, t.TempDir(), "s.bin", 51, 3*testChunk+77)

	res, err := admin.Push(context.Background(), local, "/a/s.bin", PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if reqs, n := p.uploads(); reqs != 1 || n != int64(len(data)) || res.Instant != 0 || sessionCalls(p) != 0 {
		t.Fatalf("new content: %d requests carrying %d bytes (want 1 and %d), %+v, calls %v", reqs, n, len(data), res, p.paths)
	}

	for _, tc := range []struct {
		c       *Client
		path    string
		instant bool
	}{
		{admin, "/b/copy.bin", true},
		{New(p.URL, "bob", "bob-pass-123"), "/mine.bin", false},
	} {
		p.reset()
		res, err := tc.c.Push(context.Background(), local, tc.path, PushOptions{})
		if err != nil {
			t.Fatal(err)
		}
		reqs, n := p.uploads()
		want := int64(len(data))
		if tc.instant {
			want = 0
		}
		if (res.Instant == 1) != tc.instant || reqs != 1 || n != want || res.BytesSent != want || sessionCalls(p) != 0 {
			t.Fatalf("%s: %d requests carrying %d bytes (want 1 and %d), %+v, calls %v", tc.path, reqs, n, want, res, p.paths)
		}
		wantPulled(t, New(d.URL, tc.c.User, tc.c.Password), tc.path, data)
	}
}
