package drive

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"time"

	"netdisk/chunker"
	"netdisk/dedup"
	"netdisk/meta"
)

// Whole-content checksums (MD5, SHA-1) of file versions that were committed
// without them: instant upload, and the upload API's merges whose chunks did
// not all reach this process in order (sessionsums.go), commit chunk lists
// whose bytes the server never saw in order. The queue is the store itself
// (files whose checksums are NULL), so it survives a restart; a pass reads
// each such file's chunks and records the sums only if the file still holds
// that very version (meta.SetChecksums), so a version committed meanwhile is
// never given another version's sums.

// The pass yields to uploads: before each chunk it reads, it waits while a
// chunk body is being received (Receiving) and until none has been for
// sumQuiet, for at most sumDefer per file. A large upload through the
// chunked API (a mount's write + fsync) is CPU bound on hashing, and the
// pass over the file just merged (two more hash passes over every byte)
// would otherwise take its cores from the next file; sumQuiet covers the
// moments between one chunk and the next of a stream. On a server that is
// never idle the checksums of a file come at most sumDefer late.
//
// These times are real time, not the drive's clock (Config.Now): the wait
// shares the CPU, and a timer wakes it. On a test's frozen clock it would
// never end, and tests that freeze it to check the pass would hang; the
// tests of the wait itself set sumQuiet and sumDefer to 0 or an hour
// instead, so none depends on how long anything takes.
const (
	sumDefer = 5 * time.Second        // Drive.sumDefer unless a test sets it
	sumQuiet = 250 * time.Millisecond // Drive.sumQuiet unless a test sets it
)

// receiving counts chunk bodies being received; idle is closed while there
// are none, last is when the latest one ended.
type receiving struct {
	mu   sync.Mutex
	n    int
	idle chan struct{}
	last time.Time
}

func newReceiving() *receiving {
	r := &receiving{idle: make(chan struct{})}
	close(r.idle)
	return r
}

// Receiving notes a chunk body being received (the upload API's chunks, from
// before the first byte is read until it is stored or refused); call done
// once, when it is.
func (d *Drive) Receiving() (done func()) {
	r := d.recv
	r.mu.Lock()
	if r.n == 0 {
		r.idle = make(chan struct{})
	}
	r.n++
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			if r.n--; r.n == 0 {
				close(r.idle)
				r.last = time.Now()
			}
			r.mu.Unlock()
		})
	}
}

// yieldToUploads waits until no chunk body is being received and none has
// been for sumQuiet, or the deadline passes, or ctx ends (its error).
func (d *Drive) yieldToUploads(ctx context.Context, deadline time.Time) error {
	for waited := false; ; waited = true {
		r := d.recv
		r.mu.Lock()
		idle, busy, quietAt := r.idle, r.n > 0, r.last.Add(d.sumQuiet)
		r.mu.Unlock()
		now := time.Now()
		if !busy && !now.Before(quietAt) || !now.Before(deadline) {
			return nil
		}
		if !waited && d.sumYield != nil {
			d.sumYield()
		}
		wake, busyCh := deadline, idle
		if !busy && quietAt.Before(deadline) {
			wake = quietAt
		}
		if !busy {
			busyCh = nil // closed: wait for wake, then check again
		}
		t := time.NewTimer(wake.Sub(now))
		select {
		case <-busyCh:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// FillChecksums runs one pass over every file whose checksums are unknown and
// returns how many it filled. A file whose chunk cannot be read is logged and
// left for a later pass.
func (d *Drive) FillChecksums(ctx context.Context) (filled int, err error) {
	d.sumMu.Lock()
	defer d.sumMu.Unlock()
	p := &d.progress
	p.sumRunning.Store(true)
	defer func() {
		p.sumRunning.Store(false)
		if err == nil {
			p.sumPasses.Add(1)
		}
		if filled > 0 {
			p.sumLast.Store(d.now().UnixNano())
		}
	}()
	var after int64
	for {
		ns, err := d.meta.PendingChecksums(ctx, after, 100)
		if err != nil {
			return filled, err
		}
		if len(ns) == 0 {
			return filled, nil
		}
		for _, n := range ns {
			after = n.ID
			ok, err := d.fillOne(ctx, n)
			if ctx.Err() != nil {
				return filled, ctx.Err()
			}
			if err != nil {
				p.sumSkipped.Add(1)
				d.log.Warn("checksums: file skipped until the next pass", "node", n.ID, "err", err)
				continue
			}
			if ok {
				filled++
				p.sumFiles.Add(1)
			}
		}
	}
}

// fillOne hashes the current chunks of file n. The guard it records under is
// the file hash of the chunks it actually read, not n's, so the sums always
// belong to the version they were computed from.
func (d *Drive) fillOne(ctx context.Context, n meta.Node) (bool, error) {
	chunks, err := d.meta.FileChunks(ctx, n.ID)
	if err != nil {
		return false, err
	}
	for _, c := range chunks {
		d.pins.Pin(ctx, dedup.Key(c.SHA256)) // GC must not take them mid-read
	}
	defer func() {
		for _, c := range chunks {
			d.pins.Unpin(ctx, dedup.Key(c.SHA256))
		}
	}()
	// A merge may have left the sums of the chunks that arrived in order
	// (sessionsums.go): only the rest is read.
	hm, hs, from, size := d.resumeFrom(n, chunks)
	w := io.MultiWriter(hm, hs)
	fh := chunker.NewFileHasher()
	for _, c := range chunks[:from] {
		fh.Add(c.MD5)
	}
	deadline := time.Now().Add(d.sumDefer)
	for _, c := range chunks[from:] {
		if err := d.yieldToUploads(ctx, deadline); err != nil {
			return false, err
		}
		f, err := d.OpenSegment(ctx, Segment{Key: dedup.Key(c.SHA256), Size: c.Size})
		if err != nil {
			return false, err
		}
		k, err := io.Copy(w, io.LimitReader(f, c.Size))
		f.Close()
		d.progress.sumBytes.Add(k)
		if err == nil && k != c.Size {
			err = fmt.Errorf("chunk %s: %d bytes, %d expected", c.SHA256, k, c.Size)
		}
		if err != nil {
			return false, err
		}
		fh.Add(c.MD5)
		size += c.Size
	}
	return d.meta.SetChecksums(ctx, n.ID, fh.Sum(), size, hex.EncodeToString(hm.Sum(nil)), hex.EncodeToString(hs.Sum(nil)))
}

// KickChecksums asks RunChecksums for a pass soon (after a commit that left
// checksums unknown); it never blocks.
func (d *Drive) KickChecksums() {
	select {
	case d.sumKick <- struct{}{}:
	default:
	}
}

// RunChecksums runs a pass at once (files left unknown before a restart),
// then whenever kicked and every interval, until ctx ends. done, if not nil,
// receives the result of each pass (tests wait on it instead of sleeping).
func (d *Drive) RunChecksums(ctx context.Context, every time.Duration, done chan<- int) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select { // the pass about to run covers every kick so far
		case <-d.sumKick:
		default:
		}
		n, err := d.FillChecksums(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			d.log.Error("checksums pass", "err", err)
		} else if n > 0 {
			d.log.Debug("checksums pass", "filled", n)
		}
		if done != nil {
			select {
			case done <- n:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-d.sumKick:
		case <-t.C:
		}
	}
}
