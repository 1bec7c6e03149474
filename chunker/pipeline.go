package chunker

// The client upload pipeline of seed 000, protocol-neutral: the file is read
// once, its chunks are hashed by a worker pool as they are read, and every
// hashed chunk becomes a task in a concurrent queue limited to N. A task asks
// the remote whether it holds the chunk (answering a challenge when asked) and
// uploads it otherwise. When every chunk is hashed the file hash is computed
// and checked: a file the remote already holds completes at once (instant
// upload) and cancels the queue; otherwise the pipeline waits for QueueDrained
// and merges. A task that keeps failing aborts everything (QueueAborted) and
// merge is never called.
//
// The remote is an interface (Remote) so the HTTP client, the FUSE write-back
// and tests can each provide it.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"netdisk/apitype"
)

// Challenge asks the client to prove it holds some content: ranges are
// [offset, length] pairs within the chunk (chunk checks) or the file (file
// checks). It is the API's wire type, named here for Remote.
type Challenge = apitype.Challenge

// Check is the remote's answer to a patchHash.
type Check struct {
	Exists bool
	// Challenge is set when the remote holds the content but wants a proof first.
	Challenge *Challenge
}

// Chunk names one chunk of the file being uploaded.
type Chunk struct {
	Index  int
	Offset int64
	Size   int64
	Hash   string // lowercase hex MD5
}

// Remote is the per-chunk and per-file half of the upload protocol, bound to
// one upload session. Implementations must be safe for concurrent use: up to
// Concurrency chunk calls run at once, beside one file call.
//
// Errors: the pipeline retries any error that Options.Retryable accepts (by
// default everything except context cancellation and errors marked with
// Permanent). A wrong proof is not an error: ProveChunk/ProveFile return false.
type Remote interface {
	PatchChunk(ctx context.Context, c Chunk) (Check, error)
	ProveChunk(ctx context.Context, c Chunk, ch Challenge, data []byte) (bool, error)
	UploadChunk(ctx context.Context, c Chunk, data []byte) error
	// PatchFile: Exists without a Challenge means the remote committed the file.
	PatchFile(ctx context.Context, fileHash string) (Check, error)
	ProveFile(ctx context.Context, fileHash string, ch Challenge, file io.ReaderAt) (bool, error)
	Merge(ctx context.Context, fileHash string) error
}

// EventKind names a pipeline event. The first five are seed 000's; the others
// report progress.
type EventKind int

const (
	ChunkHashed     EventKind = iota + 1 // one chunk hashed: a task entered the queue
	AllChunksHashed                      // no task will be added any more
	FileHashed                           // the file hash is known (Event.Hash)
	QueueDrained                         // every task succeeded
	QueueAborted                         // a task failed for good: everything is cancelled
	ChunkStarted                         // a task left pending and runs
	ChunkDone                            // a task succeeded (Event.How says how)
	ChunkRetry                           // a task attempt failed and will be retried (Event.Err, Event.Attempt)
	InstantUpload                        // the remote already held the file: finished without merge
	Merged                               // merge succeeded
	Cancelled                            // the caller's context was cancelled
)

var kindNames = [...]string{"", "ChunkHashed", "AllChunksHashed", "FileHashed", "QueueDrained", "QueueAborted",
	"ChunkStarted", "ChunkDone", "ChunkRetry", "InstantUpload", "Merged", "Cancelled"}

func (k EventKind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// MarshalText makes events readable in JSON streams.
func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// How a chunk task completed.
type How string

const (
	HowUploaded How = "uploaded" // its bytes were sent
	HowExists   How = "exists"   // the remote held it for this user
	HowProved   How = "proved"   // someone else held it and the proof was accepted
	HowResumed  How = "resumed"  // the session already had it (Options.Uploaded)
)

// Counters are seed 000's queue counters, plus Hashed and Cancelled so that
// Hashed == Pending + InFlight + Completed + Failed + Cancelled always holds.
type Counters struct {
	TotalChunks     int  `json:"totalChunks"`
	Hashed          int  `json:"hashed"`
	Pending         int  `json:"pending"`
	InFlight        int  `json:"inFlight"`
	Completed       int  `json:"completed"`
	Failed          int  `json:"failed"`
	Cancelled       int  `json:"cancelled"`
	AllChunksHashed bool `json:"allChunksHashed"`
	// BytesSent counts chunk bytes actually uploaded; BytesSkipped those that
	// completed without sending (dedup, proof, resume).
	BytesSent    int64 `json:"bytesSent"`
	BytesSkipped int64 `json:"bytesSkipped"`
}

// drained is seed 000's condition for QueueDrained, verbatim.
func (c Counters) drained() bool {
	return c.AllChunksHashed && c.Pending == 0 && c.InFlight == 0 && c.Failed == 0 && c.Completed == c.TotalChunks
}

// Event is one observation of the pipeline, with the counters as they were
// right after it.
type Event struct {
	Kind     EventKind `json:"event"`
	Index    int       `json:"index"`
	Size     int64     `json:"size,omitempty"`
	Hash     string    `json:"hash,omitempty"`
	How      How       `json:"how,omitempty"`
	Attempt  int       `json:"attempt,omitempty"`
	Err      error     `json:"-"`
	Error    string    `json:"error,omitempty"` // Err's message, for JSON streams
	Counters Counters  `json:"counters"`
}

// Options tune a pipeline run; the zero value is usable.
type Options struct {
	ChunkSize   int64 // default DefaultChunkSize
	Concurrency int   // queue limit N; default 3 (seed 004)
	HashWorkers int   // default GOMAXPROCS
	// Uploaded reports chunks the session already holds (init's "uploaded"):
	// their tasks complete without a call.
	Uploaded func(index int) bool
	// Hashes, when it has one entry per chunk, are the chunk hashes already
	// known to the caller (e.g. computed as the data was written): the file
	// is then not read to hash it, only to send or prove chunks.
	Hashes []string
	// Retries is how many times a failing call is retried (default 5; <0 none).
	Retries int
	// Backoff is the first retry delay, doubled each time up to MaxBackoff,
	// with full jitter (defaults 200ms, 5s).
	Backoff, MaxBackoff time.Duration
	// Retryable decides whether an error is worth retrying (default: not
	// context errors, not errors marked Permanent).
	Retryable func(error) bool
	// Sleep waits between retries; tests inject it (default: a timer honouring ctx).
	Sleep func(ctx context.Context, d time.Duration) error
	// OnEvent observes every event, in order, one at a time. It runs under
	// the pipeline's lock: keep it short and do not call back into the pipeline.
	OnEvent func(Event)
}

// Result is what a finished run did.
type Result struct {
	FileHash string
	Instant  bool // completed by the file check, without merge
	Counters Counters
}

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying (e.g. a 4xx answer).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// ErrAborted is wrapped by the error of a run whose queue aborted.
var ErrAborted = errors.New("upload aborted")

// Proof answers a challenge: hex SHA-256 of the nonce's hex string followed by
// the bytes of each range of r, in order (shared/API.md).
func Proof(nonce string, r io.ReaderAt, ranges [][2]int64) (string, error) {
	h := sha256.New()
	h.Write([]byte(nonce))
	for _, rg := range ranges {
		if rg[0] < 0 || rg[1] < 0 {
			return "", fmt.Errorf("challenge range %v is negative", rg)
		}
		if _, err := io.Copy(h, io.NewSectionReader(r, rg[0], rg[1])); err != nil {
			return "", fmt.Errorf("read challenged range %v: %w", rg, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Upload runs the pipeline over the size bytes of file.
func Upload(ctx context.Context, file io.ReaderAt, size int64, remote Remote, o Options) (Result, error) {
	p := newPipeline(file, size, remote, o)
	return p.run(ctx)
}

type pipeline struct {
	file   io.ReaderAt
	size   int64
	remote Remote
	o      Options

	mu       sync.Mutex
	c        Counters
	queue    []Chunk       // pending tasks, FIFO
	wake     chan struct{} // signals runners: queue grew or state changed
	aborted  bool
	stopped  bool  // instant upload or cancel: drop everything
	abortErr error // first unrecoverable task error
	drained  chan struct{}
	abortCh  chan struct{}

	// checking is closed when the file check is over. A task failing while
	// it runs waits for it: the remote may have committed the file (instant
	// upload) and refuse further chunks, which is then no failure.
	checking     chan struct{}
	checkStarted bool

	qctx    context.Context // cancelled on abort, instant upload or caller cancel
	qcancel context.CancelFunc
}

func newPipeline(file io.ReaderAt, size int64, remote Remote, o Options) *pipeline {
	if o.ChunkSize <= 0 {
		o.ChunkSize = DefaultChunkSize
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 3
	}
	if o.HashWorkers <= 0 {
		o.HashWorkers = runtime.GOMAXPROCS(0)
	}
	if o.Retries == 0 {
		o.Retries = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = 200 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.Retryable == nil {
		o.Retryable = func(err error) bool { return !IsPermanent(err) }
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	p := &pipeline{file: file, size: size, remote: remote, o: o,
		wake: make(chan struct{}, 1), drained: make(chan struct{}), abortCh: make(chan struct{}), checking: make(chan struct{})}
	p.c.TotalChunks = int(ChunkCount(size, o.ChunkSize))
	return p
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// emit delivers an event; the caller holds p.mu so events and counters agree.
func (p *pipeline) emit(e Event) {
	e.Counters = p.c
	if e.Err != nil {
		e.Error = e.Err.Error()
	}
	if p.o.OnEvent != nil {
		p.o.OnEvent(e)
	}
}

func (p *pipeline) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// checkDrainedLocked emits QueueDrained once, when seed 000's condition holds.
func (p *pipeline) checkDrainedLocked() {
	if p.aborted || p.stopped || !p.c.drained() {
		return
	}
	select {
	case <-p.drained:
		return
	default:
	}
	p.emit(Event{Kind: QueueDrained, Index: -1})
	close(p.drained)
}

func (p *pipeline) run(ctx context.Context) (Result, error) {
	p.qctx, p.qcancel = context.WithCancel(ctx)
	defer p.qcancel()

	var wg sync.WaitGroup
	for range p.o.Concurrency {
		wg.Add(1)
		go func() { defer wg.Done(); p.runner() }()
	}
	hashes := make(chan string, 1) // file hash, or closed on failure
	hashErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		fh, err := p.hashAll()
		if err != nil {
			hashErr <- err
			close(hashes)
			return
		}
		hashes <- fh
	}()

	res, err := p.finish(ctx, hashes, hashErr)
	p.stop()
	wg.Wait()
	p.mu.Lock()
	res.Counters = p.c
	p.mu.Unlock()
	return res, err
}

// finish follows seed 000 after the hashing: file check, then instant upload
// or wait for QueueDrained and merge.
func (p *pipeline) finish(ctx context.Context, hashes <-chan string, hashErr <-chan error) (Result, error) {
	var fh string
	select {
	case h, ok := <-hashes:
		if !ok {
			err := <-hashErr
			if p.isAborted() {
				return Result{}, p.abortError()
			}
			if ctx.Err() != nil {
				return Result{}, p.cancelled(ctx)
			}
			return Result{}, fmt.Errorf("hash file: %w", err)
		}
		fh = h
	case <-p.abortCh:
		return Result{}, p.abortError()
	case <-ctx.Done():
		return Result{}, p.cancelled(ctx)
	}
	res := Result{FileHash: fh}

	p.mu.Lock()
	p.checkStarted = true
	p.mu.Unlock()
	instant, err := p.checkFile(fh)
	if instant {
		p.mu.Lock()
		p.stopLocked()
		p.mu.Unlock()
	}
	close(p.checking)
	if err != nil {
		if ctx.Err() != nil {
			return res, p.cancelled(ctx)
		}
		if p.isAborted() {
			return res, p.abortError()
		}
		// A failing file check is not fatal: the chunks and merge decide.
	}
	if instant {
		p.mu.Lock()
		p.stopLocked()
		p.emit(Event{Kind: InstantUpload, Index: -1, Hash: fh})
		p.mu.Unlock()
		res.Instant = true
		return res, nil
	}

	select {
	case <-p.drained:
	case <-p.abortCh:
		return res, p.abortError()
	case <-ctx.Done():
		return res, p.cancelled(ctx)
	}
	if err := p.retry(ctx, -1, func(ctx context.Context) error { return p.remote.Merge(ctx, fh) }); err != nil {
		if ctx.Err() != nil {
			return res, p.cancelled(ctx)
		}
		return res, fmt.Errorf("merge: %w", err)
	}
	p.mu.Lock()
	p.emit(Event{Kind: Merged, Index: -1, Hash: fh})
	p.mu.Unlock()
	return res, nil
}

func (p *pipeline) isAborted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.aborted
}

func (p *pipeline) abortError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Errorf("%w: %w", ErrAborted, p.abortErr)
}

func (p *pipeline) cancelled(ctx context.Context) error {
	p.mu.Lock()
	if !p.stopped && !p.aborted {
		p.stopLocked()
		p.emit(Event{Kind: Cancelled, Index: -1, Err: ctx.Err()})
	}
	p.mu.Unlock()
	return ctx.Err()
}

// stopLocked drops pending tasks and cancels in-flight ones; their runners
// count them as cancelled, never as failed.
func (p *pipeline) stopLocked() {
	if !p.stopped {
		p.stopped = true
		p.c.Cancelled += len(p.queue)
		p.c.Pending -= len(p.queue)
		p.queue = nil
	}
	p.qcancel()
	p.signal()
}

func (p *pipeline) stop() {
	p.mu.Lock()
	p.stopLocked()
	p.mu.Unlock()
}

// checkFile is patchHash on the file: true when the remote committed it.
func (p *pipeline) checkFile(fh string) (bool, error) {
	var chk Check
	err := p.retry(p.qctx, -1, func(ctx context.Context) (err error) {
		chk, err = p.remote.PatchFile(ctx, fh)
		return err
	})
	if err != nil || !chk.Exists {
		return false, err
	}
	if chk.Challenge == nil {
		return true, nil
	}
	var ok bool
	err = p.retry(p.qctx, -1, func(ctx context.Context) (err error) {
		ok, err = p.remote.ProveFile(ctx, fh, *chk.Challenge, p.file)
		return err
	})
	return ok, err
}

// hashAll reads the file in order, hashes chunks in a worker pool and enqueues
// each as soon as it is hashed. It returns the file hash.
func (p *pipeline) hashAll() (string, error) {
	n := p.c.TotalChunks
	if len(p.o.Hashes) == n && n > 0 {
		for i, h := range p.o.Hashes {
			p.enqueue(Chunk{Index: i, Offset: int64(i) * p.o.ChunkSize, Size: ChunkLen(p.size, p.o.ChunkSize, int64(i)), Hash: h})
		}
		return p.allHashed(p.o.Hashes), nil
	}
	hashes := make([]string, n)
	type job struct {
		c   Chunk
		buf []byte
	}
	jobs := make(chan job)
	// Buffers are recycled so memory stays at HashWorkers+1 chunks.
	pool := make(chan []byte, p.o.HashWorkers+1)
	for range p.o.HashWorkers + 1 {
		pool <- nil
	}
	var wg sync.WaitGroup
	for range p.o.HashWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				j.c.Hash = ChunkMD5(j.buf)
				hashes[j.c.Index] = j.c.Hash
				pool <- j.buf
				p.enqueue(j.c)
			}
		}()
	}
	var readErr error
	for i := 0; i < n; i++ {
		var buf []byte
		select {
		case buf = <-pool:
		case <-p.qctx.Done():
			readErr = p.qctx.Err()
		}
		if readErr != nil {
			break
		}
		off := int64(i) * p.o.ChunkSize
		l := ChunkLen(p.size, p.o.ChunkSize, int64(i))
		if int64(cap(buf)) < l {
			buf = make([]byte, p.o.ChunkSize)
		}
		buf = buf[:l]
		if _, err := p.file.ReadAt(buf, off); err != nil && !(errors.Is(err, io.EOF) && len(buf) == int(l)) {
			readErr = fmt.Errorf("read chunk %d: %w", i, err)
			break
		}
		jobs <- job{Chunk{Index: i, Offset: off, Size: l}, buf}
	}
	close(jobs)
	wg.Wait()
	if readErr != nil {
		return "", readErr
	}
	return p.allHashed(hashes), nil
}

// allHashed marks the end of hashing and returns the file hash.
func (p *pipeline) allHashed(hashes []string) string {
	p.mu.Lock()
	p.c.AllChunksHashed = true
	p.emit(Event{Kind: AllChunksHashed, Index: -1})
	p.checkDrainedLocked()
	p.mu.Unlock()
	// File hash: chunk hashes merged in order.
	fh := FileHash(hashes)
	p.mu.Lock()
	p.emit(Event{Kind: FileHashed, Index: -1, Hash: fh})
	p.mu.Unlock()
	return fh
}

func (p *pipeline) enqueue(c Chunk) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.c.Hashed++
	if p.stopped || p.aborted {
		p.c.Cancelled++
		p.emit(Event{Kind: ChunkHashed, Index: c.Index, Size: c.Size, Hash: c.Hash})
		return
	}
	p.c.Pending++
	p.queue = append(p.queue, c)
	p.emit(Event{Kind: ChunkHashed, Index: c.Index, Size: c.Size, Hash: c.Hash})
	p.signal()
}

// runner is one of the N queue slots.
func (p *pipeline) runner() {
	for {
		p.mu.Lock()
		if p.stopped || p.aborted {
			p.mu.Unlock()
			return
		}
		if len(p.queue) == 0 {
			p.mu.Unlock()
			select {
			case <-p.wake:
			case <-p.qctx.Done():
			}
			continue
		}
		c := p.queue[0]
		p.queue = p.queue[1:]
		p.c.Pending--
		p.c.InFlight++
		p.emit(Event{Kind: ChunkStarted, Index: c.Index, Size: c.Size, Hash: c.Hash})
		if len(p.queue) > 0 {
			p.signal() // let another idle runner take the next one
		}
		p.mu.Unlock()

		how, err := p.task(c)

		if err != nil && p.qctx.Err() == nil {
			p.mu.Lock()
			started := p.checkStarted
			p.mu.Unlock()
			if started {
				select {
				case <-p.checking:
				case <-p.qctx.Done():
				}
			}
		}
		p.mu.Lock()
		p.c.InFlight--
		if err == nil && how == HowUploaded {
			p.c.BytesSent += c.Size // sent, whatever happens to the task now
		}
		switch {
		case p.stopped || p.aborted || p.qctx.Err() != nil:
			// Cancelled by instant upload, abort or the caller: not a failure,
			// and a late success no longer counts either.
			p.c.Cancelled++
		case err == nil:
			p.c.Completed++
			if how != HowUploaded {
				p.c.BytesSkipped += c.Size
			}
			p.emit(Event{Kind: ChunkDone, Index: c.Index, Size: c.Size, Hash: c.Hash, How: how})
			p.checkDrainedLocked()
		default:
			p.c.Failed++
			p.aborted = true
			p.abortErr = fmt.Errorf("chunk %d: %w", c.Index, err)
			p.c.Cancelled += len(p.queue)
			p.c.Pending -= len(p.queue)
			p.queue = nil
			p.emit(Event{Kind: QueueAborted, Index: c.Index, Err: err})
			close(p.abortCh)
			p.qcancel()
		}
		p.mu.Unlock()
	}
}

// task is seed 000's per-chunk work: patchHash, then prove or upload.
func (p *pipeline) task(c Chunk) (How, error) {
	if p.o.Uploaded != nil && p.o.Uploaded(c.Index) {
		return HowResumed, nil
	}
	ctx := p.qctx
	var chk Check
	if err := p.retry(ctx, c.Index, func(ctx context.Context) (err error) {
		chk, err = p.remote.PatchChunk(ctx, c)
		return err
	}); err != nil {
		return "", err
	}
	if chk.Exists && chk.Challenge == nil {
		return HowExists, nil
	}
	data := make([]byte, c.Size)
	if _, err := p.file.ReadAt(data, c.Offset); err != nil && !errors.Is(err, io.EOF) {
		return "", Permanent(fmt.Errorf("read chunk %d: %w", c.Index, err))
	}
	// No second MD5 here: if the file changed since it was hashed, the remote
	// hashes what it receives and refuses it (a permanent error, so an abort).
	if chk.Exists {
		var ok bool
		if err := p.retry(ctx, c.Index, func(ctx context.Context) (err error) {
			ok, err = p.remote.ProveChunk(ctx, c, *chk.Challenge, data)
			return err
		}); err != nil {
			return "", err
		}
		if ok {
			return HowProved, nil
		}
	}
	if err := p.retry(ctx, c.Index, func(ctx context.Context) error { return p.remote.UploadChunk(ctx, c, data) }); err != nil {
		return "", err
	}
	return HowUploaded, nil
}

// retry runs f until it succeeds, fails permanently or runs out of retries,
// sleeping with exponential backoff and full jitter in between.
func (p *pipeline) retry(ctx context.Context, index int, f func(context.Context) error) error {
	d := p.o.Backoff
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !p.o.Retryable(err) || attempt > p.o.Retries {
			return err
		}
		p.mu.Lock()
		p.emit(Event{Kind: ChunkRetry, Index: index, Attempt: attempt, Err: err})
		p.mu.Unlock()
		wait := time.Duration(rand.Int64N(int64(d)) + 1)
		if err := p.o.Sleep(ctx, wait); err != nil {
			return err
		}
		d = min(2*d, p.o.MaxBackoff)
	}
}
