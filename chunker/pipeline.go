package chunker

// The client upload pipeline of seed 000, protocol-neutral: the file is read
// once, its chunks are hashed (MD5 and SHA-256) by a worker pool as they are
// read, and every hashed chunk becomes a task in a concurrent queue limited
// to N. A task asks
// the remote whether it holds the chunk (answering a challenge when asked) and
// uploads it otherwise. When every chunk is hashed the file hash is computed
// and checked: a file the remote already holds completes at once (instant
// upload) and cancels the queue; otherwise the pipeline waits for QueueDrained
// and merges. A task that keeps failing aborts everything (QueueAborted) and
// merge is never called. A merge that finds the session's chunks are not the
// file's (ErrContentChanged: a session resumed after the file changed) is
// reported as MergeFailed; when the remote can restart, every chunk is then
// checked again by hash in a fresh session, only the changed ones are sent,
// and merge runs once more.
//
// The remote is an interface (Remote) so the HTTP client, the FUSE write-back
// and tests can each provide it.
//
// States of a run (p.mu guards the flags; each channel is closed at most once):
//
//	                      running: runners take tasks from queue, woken by wake
//	                         │
//	   ┌─────────────────────┼──────────────────────────┬────────────────────────┐
//	   │ seed 000's drained  │ a task fails for good    │ the file check         │ the caller
//	   │ condition holds     │ (runner)                 │ committed the file     │ cancels ctx
//	   ▼                     ▼                          ▼                        ▼
//	 close(drained)        aborted = true             stopped = true           stopped = true
//	 QueueDrained          close(abortCh), qcancel()  qcancel()                qcancel()
//	 → finish merges       QueueAborted               InstantUpload            Cancelled
//	   │                   → finish returns ErrAborted
//	   │ merge fails with ErrContentChanged (once, with a Restarter)
//	   ▼
//	 MergeFailed; Restart; rechecking = true; drained = a new channel;
//	 every chunk queued again → close(drained) without QueueDrained → merge
//
// aborted and stopped are final: no task starts after either, a task that ends
// afterwards counts as Cancelled (never Failed, never Completed), and
// QueueDrained can no longer fire. run sets stopped on the way out whatever
// happened, so every runner returns before Upload does.
//
// Channels: wake (buffered 1) nudges idle runners when the queue grows or the
// state changes; drained and abortCh release finish; checking is closed when
// the file check ends, and a task failing while it runs waits for it (the
// failure may be the commit's doing: the remote refuses chunks of a file it
// just completed); qctx, under which every remote call runs, is cancelled on
// abort, stop and the end of the run.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

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

	// hashes are the chunk hashes once all are known; rechecking is set when
	// a merge found the content changed and every chunk is checked again in
	// a fresh session (drained is then a new channel, closed without a
	// second QueueDrained).
	hashes     []string // MD5s
	shas       []string // SHA-256s
	rechecking bool

	qctx    context.Context // cancelled on abort, instant upload or caller cancel
	qcancel context.CancelFunc
}

func newPipeline(file io.ReaderAt, size int64, remote Remote, o Options) *pipeline {
	o = o.withDefaults()
	p := &pipeline{file: file, size: size, remote: remote, o: o,
		wake: make(chan struct{}, 1), drained: make(chan struct{}), abortCh: make(chan struct{}), checking: make(chan struct{})}
	p.c.TotalChunks = int(ChunkCount(size, o.ChunkSize))
	return p
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
	if !p.rechecking {
		p.emit(Event{Kind: QueueDrained, Index: -1})
	}
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
	hashes := make(chan FileSum, 1) // or closed on failure
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
func (p *pipeline) finish(ctx context.Context, hashes <-chan FileSum, hashErr <-chan error) (Result, error) {
	var fh FileSum
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
	res := Result{FileHash: fh.Hash}

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
		p.emit(Event{Kind: InstantUpload, Index: -1, Hash: fh.Hash})
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
	err = p.merge(ctx, fh)
	if r, ok := p.remote.(Restarter); ok && errors.Is(err, ErrContentChanged) {
		if err = p.recheck(ctx, r, fh); err == nil {
			err = p.merge(ctx, fh)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return res, p.cancelled(ctx)
		}
		if errors.Is(err, ErrAborted) {
			return res, err
		}
		return res, fmt.Errorf("merge: %w", err)
	}
	p.mu.Lock()
	p.emit(Event{Kind: Merged, Index: -1, Hash: fh.Hash})
	p.mu.Unlock()
	return res, nil
}

// merge calls Merge (retried); a failure for good is MergeFailed.
func (p *pipeline) merge(ctx context.Context, fh FileSum) error {
	err := p.retry(ctx, -1, func(ctx context.Context) error { return p.remote.Merge(ctx, fh) })
	if err != nil && ctx.Err() == nil {
		p.mu.Lock()
		p.emit(Event{Kind: MergeFailed, Index: -1, Hash: fh.Hash, Err: err})
		p.mu.Unlock()
	}
	return err
}

// recheck runs after a merge found the session's chunks are not the file's
// (a session resumed after the file changed): the remote opens a fresh
// session and every chunk is checked again by hash, so the chunks the remote
// still holds are not sent again and only the changed ones are. The hashes
// are those of this run: the file is not hashed twice.
func (p *pipeline) recheck(ctx context.Context, r Restarter, fh FileSum) error {
	if err := p.retry(ctx, -1, func(ctx context.Context) error { return r.Restart(ctx, fh.Hash) }); err != nil {
		return fmt.Errorf("restart the upload: %w", err)
	}
	p.mu.Lock()
	if p.stopped || p.aborted {
		p.mu.Unlock()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return p.abortError()
	}
	p.rechecking = true
	p.o.Uploaded = nil // the new session holds nothing yet: ask for every chunk
	p.drained = make(chan struct{})
	drained := p.drained
	p.c.Completed = 0
	p.c.BytesSkipped = 0
	for i, h := range p.hashes {
		p.queue = append(p.queue, Chunk{Index: i, Offset: int64(i) * p.o.ChunkSize, Size: ChunkLen(p.size, p.o.ChunkSize, int64(i)), Hash: h, SHA256: p.shas[i]})
	}
	p.c.Pending = len(p.queue)
	p.checkDrainedLocked() // an empty file has nothing to check
	p.signal()
	p.mu.Unlock()
	select {
	case <-drained:
		return nil
	case <-p.abortCh:
		return p.abortError()
	case <-ctx.Done():
		return ctx.Err()
	}
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
func (p *pipeline) checkFile(fh FileSum) (bool, error) {
	return checkFile(p.qctx, p.remote, fh, p.file, func(ctx context.Context, f func(context.Context) error) error {
		return p.retry(ctx, -1, f)
	})
}

// hashAll reads the file in order, hashes chunks in a worker pool and enqueues
// each as soon as it is hashed (MD5 and SHA-256). It returns the file's names.
func (p *pipeline) hashAll() (FileSum, error) {
	n := p.c.TotalChunks
	if len(p.o.Sums) == n && n > 0 {
		hashes, shas := make([]string, n), make([]string, n)
		for i, s := range p.o.Sums {
			hashes[i], shas[i] = s.MD5, s.SHA256
			p.enqueue(Chunk{Index: i, Offset: int64(i) * p.o.ChunkSize, Size: ChunkLen(p.size, p.o.ChunkSize, int64(i)), Hash: s.MD5, SHA256: s.SHA256})
		}
		return p.allHashed(hashes, shas), nil
	}
	hashes, shas := make([]string, n), make([]string, n)
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
				s := HashChunk(j.buf)
				j.c.Hash, j.c.SHA256 = s.MD5, s.SHA256
				hashes[j.c.Index], shas[j.c.Index] = s.MD5, s.SHA256
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
		return FileSum{}, readErr
	}
	return p.allHashed(hashes, shas), nil
}

// allHashed marks the end of hashing and returns the file's names.
func (p *pipeline) allHashed(hashes, shas []string) FileSum {
	p.mu.Lock()
	p.hashes, p.shas = hashes, shas
	p.c.AllChunksHashed = true
	p.emit(Event{Kind: AllChunksHashed, Index: -1})
	p.checkDrainedLocked()
	p.mu.Unlock()
	// File hash: chunk hashes merged in order; the same for the SHA-256s.
	fh := FileSum{Hash: FileHash(hashes), SHA256: FileSHA256(shas)}
	p.mu.Lock()
	p.emit(Event{Kind: FileHashed, Index: -1, Hash: fh.Hash})
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
	return retry(ctx, p.o, f, func(attempt int, err error) {
		p.mu.Lock()
		p.emit(Event{Kind: ChunkRetry, Index: index, Attempt: attempt, Err: err})
		p.mu.Unlock()
	})
}
