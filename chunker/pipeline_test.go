package chunker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// memRemote is an in-memory server of the upload protocol, with hooks to
// inject faults. The end-to-end tests in client/ run the same pipeline against
// the real daemon; these pin the pipeline's own logic deterministically.
type memRemote struct {
	mu        sync.Mutex
	chunks    map[int][]byte    // this session's chunks
	own       map[string]bool   // chunk hashes this user holds
	others    map[string][]byte // chunk hashes someone else holds (challenge)
	fileOwn   bool              // PatchFile: this user holds the file
	fileOther []byte            // PatchFile: someone else holds these bytes (challenge)
	merged    []string
	uploads   int
	proves    int

	// uploadHook runs before an upload is accepted; a non-nil error fails it.
	uploadHook func(ctx context.Context, c Chunk, attempt int) error
	attempts   map[int]int
	patchFile  func() error
}

func newMemRemote() *memRemote {
	return &memRemote{chunks: map[int][]byte{}, own: map[string]bool{}, others: map[string][]byte{}, attempts: map[int]int{}}
}

func (m *memRemote) PatchChunk(ctx context.Context, c Chunk) (Check, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.own[c.Hash] {
		return Check{Exists: true}, nil
	}
	if _, ok := m.others[c.Hash]; ok {
		return Check{Exists: true, Challenge: &Challenge{Nonce: "n" + c.Hash[:4], Ranges: [][2]int64{{0, 1}, {c.Size / 2, c.Size - c.Size/2}}}}, nil
	}
	return Check{}, nil
}

func (m *memRemote) ProveChunk(ctx context.Context, c Chunk, ch Challenge, data []byte) (bool, error) {
	m.mu.Lock()
	held := m.others[c.Hash]
	m.proves++
	m.mu.Unlock()
	got, err := Proof(ch.Nonce, bytes.NewReader(data), ch.Ranges)
	if err != nil {
		return false, err
	}
	want, _ := Proof(ch.Nonce, bytes.NewReader(held), ch.Ranges)
	if got == want {
		m.mu.Lock()
		m.chunks[c.Index] = held
		m.mu.Unlock()
	}
	return got == want, nil
}

func (m *memRemote) UploadChunk(ctx context.Context, c Chunk, data []byte) error {
	m.mu.Lock()
	m.attempts[c.Index]++
	a := m.attempts[c.Index]
	hook := m.uploadHook
	m.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, c, a); err != nil {
			return err
		}
	}
	if ChunkMD5(data) != c.Hash {
		return Permanent(fmt.Errorf("hash mismatch"))
	}
	m.mu.Lock()
	m.chunks[c.Index] = slices.Clone(data)
	m.uploads++
	m.mu.Unlock()
	return nil
}

func (m *memRemote) PatchFile(ctx context.Context, fh FileSum) (Check, error) {
	if m.patchFile != nil {
		if err := m.patchFile(); err != nil {
			return Check{}, err
		}
	}
	switch {
	case m.fileOwn:
		return Check{Exists: true}, nil
	case m.fileOther != nil:
		return Check{Exists: true, Challenge: &Challenge{Nonce: "abc", Ranges: [][2]int64{{3, 10}, {0, 2}}}}, nil
	}
	return Check{}, nil
}

func (m *memRemote) ProveFile(ctx context.Context, fh FileSum, ch Challenge, f io.ReaderAt) (bool, error) {
	got, err := Proof(ch.Nonce, f, ch.Ranges)
	if err != nil {
		return false, err
	}
	want, _ := Proof(ch.Nonce, bytes.NewReader(m.fileOther), ch.Ranges)
	return got == want, nil
}

func (m *memRemote) Merge(ctx context.Context, fh FileSum) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var hs []string
	for i := 0; i < len(m.chunks); i++ {
		b, ok := m.chunks[i]
		if !ok {
			return Permanent(fmt.Errorf("missing chunk %d", i))
		}
		hs = append(hs, ChunkMD5(b))
	}
	if FileHash(hs) != fh.Hash {
		return Permanent(fmt.Errorf("file hash mismatch"))
	}
	m.merged = append(m.merged, fh.Hash)
	return nil
}

// recorder collects events and checks the counters' invariants on each.
type recorder struct {
	t      *testing.T
	n      int
	mu     sync.Mutex
	events []Event
	maxIn  int
}

func (r *recorder) on(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := e.Counters
	if c.Hashed != c.Pending+c.InFlight+c.Completed+c.Failed+c.Cancelled {
		r.t.Errorf("%v: hashed %d != pending+inFlight+completed+failed+cancelled %+v", e.Kind, c.Hashed, c)
	}
	if c.InFlight > r.n || c.InFlight < 0 || c.Pending < 0 {
		r.t.Errorf("%v: inFlight %d (limit %d) pending %d", e.Kind, c.InFlight, r.n, c.Pending)
	}
	if c.Completed > c.TotalChunks || c.Hashed > c.TotalChunks {
		r.t.Errorf("%v: counters beyond total: %+v", e.Kind, c)
	}
	if e.Kind == QueueDrained && !c.drained() {
		r.t.Errorf("QueueDrained with %+v", c)
	}
	if e.Kind == QueueAborted && c.Failed == 0 {
		r.t.Errorf("QueueAborted with failed=0")
	}
	r.maxIn = max(r.maxIn, c.InFlight)
	r.events = append(r.events, e)
}

func (r *recorder) kinds() []EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []EventKind
	for _, e := range r.events {
		ks = append(ks, e.Kind)
	}
	return ks
}

func (r *recorder) count(k EventKind) int {
	n := 0
	for _, x := range r.kinds() {
		if x == k {
			n++
		}
	}
	return n
}

func (r *recorder) index(k EventKind) int { return slices.Index(r.kinds(), k) }

func (r *recorder) lastIndex(k EventKind) int {
	ks := r.kinds()
	for i := len(ks) - 1; i >= 0; i-- {
		if ks[i] == k {
			return i
		}
	}
	return -1
}

func randomData(seed uint64, n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// noSleep records retry delays instead of waiting.
type noSleep struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (s *noSleep) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.delays = append(s.delays, d)
	s.mu.Unlock()
	return ctx.Err()
}

func opts(r *recorder, s *noSleep) Options {
	return Options{ChunkSize: 1000, Concurrency: r.n, HashWorkers: 2, OnEvent: r.on, Sleep: s.sleep}
}

func TestPipelineNewFileEventOrder(t *testing.T) {
	data := randomData(1, 10500) // 11 chunks, the last one short
	m := newMemRemote()
	r := &recorder{t: t, n: 3}
	res, err := Upload(context.Background(), bytes.NewReader(data), int64(len(data)), m, opts(r, &noSleep{}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Instant || res.Counters.Completed != 11 || res.Counters.BytesSent != 10500 || res.Counters.Failed != 0 {
		t.Fatalf("result %+v", res)
	}
	var hs []string
	for i := 0; i < len(data); i += 1000 {
		hs = append(hs, ChunkMD5(data[i:min(i+1000, len(data))]))
	}
	if want := FileHash(hs); res.FileHash != want || len(m.merged) != 1 || m.merged[0] != want {
		t.Fatalf("file hash %s merged %v, want %s", res.FileHash, m.merged, want)
	}
	if n := r.count(ChunkHashed); n != 11 {
		t.Fatalf("%d ChunkHashed", n)
	}
	ach, fh, qd, mg := r.index(AllChunksHashed), r.index(FileHashed), r.index(QueueDrained), r.index(Merged)
	if !(r.lastIndex(ChunkHashed) < ach && ach < fh && ach < qd && r.lastIndex(ChunkDone) < qd && qd < mg && fh < mg) {
		t.Fatalf("event order wrong: %v", r.kinds())
	}
	if mg != len(r.events)-1 || r.count(QueueDrained) != 1 || r.count(QueueAborted) != 0 {
		t.Fatalf("events: %v", r.kinds())
	}
	// Each chunk: hashed, then started, then done.
	for i := 0; i < 11; i++ {
		var seq []EventKind
		for _, e := range r.events {
			if e.Index == i && (e.Kind == ChunkHashed || e.Kind == ChunkStarted || e.Kind == ChunkDone) {
				seq = append(seq, e.Kind)
			}
		}
		if !slices.Equal(seq, []EventKind{ChunkHashed, ChunkStarted, ChunkDone}) {
			t.Fatalf("chunk %d events %v", i, seq)
		}
	}
}

func TestPipelineQueueLimit(t *testing.T) {
	// Uploads wait until N are in flight at once, which proves the queue
	// reaches its limit; the recorder proves it never exceeds it.
	data := randomData(2, 20000)
	m := newMemRemote()
	var mu sync.Mutex
	inside, release := 0, make(chan struct{})
	m.uploadHook = func(ctx context.Context, c Chunk, _ int) error {
		mu.Lock()
		inside++
		if inside == 4 {
			close(release)
		}
		mu.Unlock()
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	r := &recorder{t: t, n: 4}
	if _, err := Upload(context.Background(), bytes.NewReader(data), int64(len(data)), m, opts(r, &noSleep{})); err != nil {
		t.Fatal(err)
	}
	if r.maxIn != 4 {
		t.Fatalf("max in flight %d, want 4", r.maxIn)
	}
}

func TestPipelineRetriesThenSucceeds(t *testing.T) {
	data := randomData(3, 5000)
	m := newMemRemote()
	m.uploadHook = func(ctx context.Context, c Chunk, attempt int) error {
		if c.Index%2 == 0 && attempt <= 2 {
			return errors.New("injected 500")
		}
		return nil
	}
	r := &recorder{t: t, n: 3}
	s := &noSleep{}
	o := opts(r, s)
	o.Backoff, o.MaxBackoff = 100*time.Millisecond, 150*time.Millisecond
	res, err := Upload(context.Background(), bytes.NewReader(data), int64(len(data)), m, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Counters.Failed != 0 || res.Counters.Completed != 5 || len(m.merged) != 1 {
		t.Fatalf("%+v merged %v", res.Counters, m.merged)
	}
	if n := r.count(ChunkRetry); n != 6 { // chunks 0, 2, 4 retried twice
		t.Fatalf("%d retries, want 6", n)
	}
	for _, d := range s.delays {
		if d <= 0 || d > 150*time.Millisecond {
			t.Fatalf("backoff %v outside (0, 150ms]", d)
		}
	}
}

func TestPipelineAbortNeverMerges(t *testing.T) {
	data := randomData(4, 30000)
	m := newMemRemote()
	m.uploadHook = func(ctx context.Context, c Chunk, attempt int) error {
		if c.Index == 5 {
			return errors.New("injected: connection reset")
		}
		return nil
	}
	r := &recorder{t: t, n: 3}
	o := opts(r, &noSleep{})
	o.Retries = 3
	_, err := Upload(context.Background(), bytes.NewReader(data), int64(len(data)), m, o)
	if !errors.Is(err, ErrAborted) {
		t.Fatalf("err %v, want ErrAborted", err)
	}
	if len(m.merged) != 0 || r.count(QueueDrained) != 0 || r.count(Merged) != 0 || r.count(QueueAborted) != 1 {
		t.Fatalf("merged %v events %v", m.merged, r.kinds())
	}
	if m.attempts[5] != 4 {
		t.Fatalf("chunk 5 tried %d times, want 1+3 retries", m.attempts[5])
	}
	ab := r.index(QueueAborted)
	for _, e := range r.events[ab+1:] {
		if e.Kind == ChunkStarted || e.Kind == ChunkDone {
			t.Fatalf("%v after QueueAborted: %v", e.Kind, r.kinds()[ab:])
		}
	}
	last := r.events[len(r.events)-1].Counters
	if last.Failed != 1 {
		t.Fatalf("failed %d", last.Failed)
	}
}

func TestPipelinePermanentErrorIsNotRetried(t *testing.T) {
	data := randomData(5, 3000)
	m := newMemRemote()
	m.uploadHook = func(ctx context.Context, c Chunk, attempt int) error {
		return Permanent(errors.New("507 over quota"))
	}
	r := &recorder{t: t, n: 1}
	_, err := Upload(context.Background(), bytes.NewReader(data), int64(len(data)), m, opts(r, &noSleep{}))
	tries := 0
	for _, n := range m.attempts {
		tries += n
	}
	if !errors.Is(err, ErrAborted) || r.count(ChunkRetry) != 0 || tries != 1 { // one runner: nothing else started
		t.Fatalf("err %v retries %d attempts %v", err, r.count(ChunkRetry), m.attempts)
	}
}

func TestPipelineInstantUploadCancelsInFlight(t *testing.T) {
	data := randomData(6, 9000)
	m := newMemRemote()
	m.fileOwn = true
	started := make(chan struct{}, 10)
	m.uploadHook = func(ctx context.Context, c Chunk, _ int) error {
		started <- struct{}{}
		<-ctx.Done() // uploads hang until the file check cancels them
		return ctx.Err()
	}
	r := &recorder{t: t, n: 3}
	res, err := Upload(context.Background(), bytes.NewReader(data), int64(len(data)), m, opts(r, &noSleep{}))
	if err != nil {
		t.Fatal(err)
	}
	c := res.Counters
	if !res.Instant || len(m.merged) != 0 || c.Failed != 0 || c.Completed != 0 || c.InFlight != 0 || c.Pending != 0 || c.Cancelled != 9 {
		t.Fatalf("instant %v merged %v counters %+v", res.Instant, m.merged, c)
	}
	if r.count(InstantUpload) != 1 || r.count(QueueDrained) != 0 || r.count(QueueAborted) != 0 || r.index(FileHashed) > r.index(InstantUpload) {
		t.Fatalf("events %v", r.kinds())
	}
}

func TestPipelineInstantUploadWithFileProof(t *testing.T) {
	data := randomData(7, 4000)
	m := newMemRemote()
	m.fileOther = data
	r := &recorder{t: t, n: 3}
	res, err := Upload(context.Background(), bytes.NewReader(data), int64(len(data)), m, opts(r, &noSleep{}))
	if err != nil || !res.Instant {
		t.Fatalf("instant %v err %v", res.Instant, err)
	}
	// A wrong proof (different bytes) falls back to uploading and merging.
	m2 := newMemRemote()
	m2.fileOther = randomData(8, 4000)
	r2 := &recorder{t: t, n: 3}
	res, err = Upload(context.Background(), bytes.NewReader(data), int64(len(data)), m2, opts(r2, &noSleep{}))
	if err != nil || res.Instant || len(m2.merged) != 1 || r2.count(QueueDrained) != 1 {
		t.Fatalf("instant %v err %v merged %v", res.Instant, err, m2.merged)
	}
}

func TestPipelineChunkDedupAndProof(t *testing.T) {
	data := randomData(9, 4000)
	m := newMemRemote()
	m.own[ChunkMD5(data[0:1000])] = true
	m.chunks[0] = data[0:1000]
	m.others[ChunkMD5(data[1000:2000])] = data[1000:2000]
	m.others[ChunkMD5(data[2000:3000])] = randomData(10, 1000) // MD5 "collision": proof must fail
	r := &recorder{t: t, n: 2}
	res, err := Upload(context.Background(), bytes.NewReader(data), int64(len(data)), m, opts(r, &noSleep{}))
	if err != nil {
		t.Fatal(err)
	}
	how := map[int]How{}
	for _, e := range r.events {
		if e.Kind == ChunkDone {
			how[e.Index] = e.How
		}
	}
	want := map[int]How{0: HowExists, 1: HowProved, 2: HowUploaded, 3: HowUploaded}
	if fmt.Sprint(how) != fmt.Sprint(want) {
		t.Fatalf("how %v, want %v", how, want)
	}
	if res.Counters.BytesSent != 2000 || res.Counters.BytesSkipped != 2000 || m.uploads != 2 || m.proves != 2 {
		t.Fatalf("%+v uploads %d proves %d", res.Counters, m.uploads, m.proves)
	}
}

func TestPipelineCallerCancel(t *testing.T) {
	data := randomData(11, 9000)
	m := newMemRemote()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	m.uploadHook = func(uctx context.Context, c Chunk, _ int) error {
		once.Do(cancel) // Ctrl-C while the first upload is in flight
		<-uctx.Done()
		return uctx.Err()
	}
	r := &recorder{t: t, n: 3}
	res, err := Upload(ctx, bytes.NewReader(data), int64(len(data)), m, opts(r, &noSleep{}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	c := res.Counters
	if c.Failed != 0 || c.InFlight != 0 || c.Pending != 0 || len(m.merged) != 0 || r.count(QueueAborted) != 0 || r.count(Cancelled) != 1 {
		t.Fatalf("counters %+v events %v", c, r.kinds())
	}
}

func TestPipelineResumeSkipsUploaded(t *testing.T) {
	data := randomData(12, 6000)
	m := newMemRemote()
	for _, i := range []int{0, 2, 3} {
		m.chunks[i] = data[i*1000 : (i+1)*1000]
	}
	r := &recorder{t: t, n: 3}
	o := opts(r, &noSleep{})
	o.Uploaded = func(i int) bool { return i == 0 || i == 2 || i == 3 }
	res, err := Upload(context.Background(), bytes.NewReader(data), int64(len(data)), m, o)
	if err != nil {
		t.Fatal(err)
	}
	if m.uploads != 3 || res.Counters.BytesSent != 3000 || res.Counters.BytesSkipped != 3000 || len(m.merged) != 1 {
		t.Fatalf("uploads %d %+v", m.uploads, res.Counters)
	}
}

func TestPipelineEmptyFile(t *testing.T) {
	m := newMemRemote()
	r := &recorder{t: t, n: 3}
	res, err := Upload(context.Background(), bytes.NewReader(nil), 0, m, opts(r, &noSleep{}))
	if err != nil || res.FileHash != "d41d8cd98f00b204e9800998ecf8427e" || len(m.merged) != 1 {
		t.Fatalf("res %+v err %v", res, err)
	}
	if !slices.Equal(r.kinds(), []EventKind{AllChunksHashed, QueueDrained, FileHashed, Merged}) {
		t.Fatalf("events %v", r.kinds())
	}
}

func TestPipelineFileCheckFailureIsNotFatal(t *testing.T) {
	data := randomData(13, 3000)
	m := newMemRemote()
	m.patchFile = func() error { return Permanent(errors.New("404 page not found")) }
	r := &recorder{t: t, n: 3}
	if _, err := Upload(context.Background(), bytes.NewReader(data), int64(len(data)), m, opts(r, &noSleep{})); err != nil || len(m.merged) != 1 {
		t.Fatalf("err %v merged %v", err, m.merged)
	}
}

func TestProofGolden(t *testing.T) {
	// sha256("n1" + "bc" + "a") computed with coreutils: printf 'n1bca' | sha256sum
	got, err := Proof("n1", bytes.NewReader([]byte("abcdef")), [][2]int64{{1, 2}, {0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "9824c00b53b8f9254d056b16a6c1ed164e0bf4b8a6afa241c4cd4a687dee6304"; got != want {
		t.Fatalf("proof %s, want %s", got, want)
	}
}

// The remote commits the file on the file check and then refuses the chunks
// still in flight: those refusals are the instant upload's doing, not failures.
func TestPipelineInstantUploadRefusedChunksAreNotFailures(t *testing.T) {
	data := randomData(14, 9000)
	m := newMemRemote()
	m.fileOwn = true
	committed, refused := make(chan struct{}), make(chan struct{}, 10)
	m.uploadHook = func(ctx context.Context, c Chunk, _ int) error {
		<-committed
		refused <- struct{}{}
		return Permanent(errors.New("409 session already merged"))
	}
	m.patchFile = func() error {
		close(committed)
		<-refused // a chunk has been refused before the answer arrives
		return nil
	}
	r := &recorder{t: t, n: 3}
	res, err := Upload(context.Background(), bytes.NewReader(data), int64(len(data)), m, opts(r, &noSleep{}))
	if err != nil || !res.Instant || res.Counters.Failed != 0 || r.count(QueueAborted) != 0 {
		t.Fatalf("err %v instant %v counters %+v events %v", err, res.Instant, res.Counters, r.kinds())
	}
}
