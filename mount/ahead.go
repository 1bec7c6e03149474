package mount

import (
	"context"
	"sync"

	"netdisk/chunker"
)

// ahead follows a staged file written in order from offset 0 (cp, tar,
// editors, the bench: almost every writer). Chunk boundaries are fixed
// multiples of the server's chunk size, so each chunk is final as soon as
// the write crosses its end: it is hashed then, from the bytes of the write
// calls, and sent to the server in the background (Backend.SendAhead).
// close/fsync then waits only for the chunks in flight, the tail and the
// merge, and never reads the staged file again to hash it. A write out of
// order ends the following; the upload at close then does everything.
//
// Methods run under the file node's lock, except the background sends.
type ahead struct {
	be   Backend
	path func() string
	cs   int64
	opt  func() (context.Context, context.CancelFunc) // bounds one send
	bg   *background                                  // owns release's goroutine; nil: none

	end   int64  // bytes written in order so far
	buf   []byte // the chunk being filled, len = end % cs
	slots chan struct{}
	pool  chan []byte
	wg    sync.WaitGroup

	mu      sync.Mutex
	sums    []chunker.Sum // of the full chunks; zero while being hashed
	handles []string      // sessions carrying chunks sent ahead
	failed  bool          // a send failed: stop sending, close uploads the rest
}

// aheadInFlight bounds chunks hashed and sent at once per file (their
// buffers are memory: aheadInFlight+1 chunks).
const aheadInFlight = 4

// aheadFirstBuf is the least a file's first buffer holds: small files fit,
// and a large one outgrows it with its first writes (one copy of this many
// bytes).
const aheadFirstBuf = 64 << 10

func newAhead(be Backend, path func() string, opt func() (context.Context, context.CancelFunc)) *ahead {
	cs := be.ChunkSize()
	if cs <= 0 {
		return nil
	}
	return &ahead{be: be, path: path, cs: cs, opt: opt,
		slots: make(chan struct{}, aheadInFlight), pool: make(chan []byte, aheadInFlight+1)}
}

// write takes the bytes of a write at off; false means the write was not
// in order and the following is over (call stop).
func (a *ahead) write(data []byte, off int64) bool {
	if off != a.end {
		return false
	}
	for len(data) > 0 {
		if a.buf == nil {
			select {
			case a.buf = <-a.pool:
				a.buf = a.buf[:0]
			default:
				// Most files are small: a whole chunk for each (zeroed
				// by the allocator) made creating 10,000 files of 1 KiB
				// half as fast. Start with what this write needs.
				a.buf = make([]byte, 0, min(a.cs, max(int64(len(data)), aheadFirstBuf)))
			}
		}
		room := int(a.cs) - len(a.buf)
		k := min(room, len(data))
		if len(a.buf)+k > cap(a.buf) {
			// Past the first buffer the file is large: its whole chunk
			// now, once, rather than growing by append, which copied
			// the chunk's bytes again at every doubling.
			whole := make([]byte, len(a.buf), a.cs)
			copy(whole, a.buf)
			a.buf = whole
		}
		a.buf = append(a.buf, data[:k]...)
		data = data[k:]
		a.end += int64(k)
		if len(a.buf) == int(a.cs) {
			a.send()
		}
	}
	return true
}

// send hands the full chunk in buf to a background worker; it waits for a
// slot, so a writer faster than the server is held back here rather than
// piling chunks up for close.
func (a *ahead) send() {
	buf := a.buf
	a.buf = nil
	a.mu.Lock()
	idx := len(a.sums)
	a.sums = append(a.sums, chunker.Sum{})
	a.mu.Unlock()
	a.slots <- struct{}{}
	a.wg.Add(1)
	p := a.path()
	go func() {
		defer a.wg.Done()
		defer func() { <-a.slots }()
		// MD5 names the chunk on the wire; the SHA-256 beside it is what
		// lets the server bind a chunk it holds to this upload.
		h := chunker.HashChunk(buf)
		a.mu.Lock()
		a.sums[idx] = h
		failed := a.failed
		a.mu.Unlock()
		if !failed {
			ctx, cancel := a.opt()
			id, err := a.be.SendAhead(ctx, p, buf, h)
			cancel()
			a.mu.Lock()
			if err != nil {
				a.failed = true
			} else {
				a.handles = append(a.handles, id)
			}
			a.mu.Unlock()
		}
		select {
		case a.pool <- buf:
		default:
		}
	}()
}

// chunkSums waits for the chunks in flight and returns the identity of every
// chunk of the size bytes written, or nil when the following does not cover
// them.
func (a *ahead) chunkSums(size int64) []chunker.Sum {
	a.wg.Wait()
	if size != a.end || size == 0 {
		return nil
	}
	a.mu.Lock()
	hs := append([]chunker.Sum(nil), a.sums...)
	a.mu.Unlock()
	if len(a.buf) > 0 {
		hs = append(hs, chunker.HashChunk(a.buf))
	}
	return hs
}

// release gives up the sessions that carried chunks, without waiting: after
// the upload that used them (all is settled then: chunkSums waited), or,
// with stop, when the following ends (the sends in flight finish first).
func (a *ahead) release(stop bool) {
	a.mu.Lock()
	hs := a.handles
	a.handles = nil
	a.mu.Unlock()
	run := func() {
		if stop {
			a.wg.Wait()
			a.mu.Lock()
			hs = append(hs, a.handles...)
			a.handles = nil
			a.mu.Unlock()
		}
		if len(hs) > 0 {
			ctx, cancel := a.opt()
			defer cancel()
			a.be.Release(ctx, hs)
		}
	}
	if a.bg == nil {
		go run()
		return
	}
	if !a.bg.add() {
		run() // closing: release here rather than leave the sessions
		return
	}
	go func() {
		defer a.bg.wg.Done()
		run()
	}()
}

// releaseNow abandons the sessions that carried chunks, waiting for it, and
// reports whether there were any. The upload at close needs it when the
// quota refuses a reservation: each of those sessions still holds its
// chunk's size, so near a full quota the file would be counted twice.
func (a *ahead) releaseNow(ctx context.Context) bool {
	a.wg.Wait()
	a.mu.Lock()
	hs := a.handles
	a.handles = nil
	a.mu.Unlock()
	if len(hs) == 0 {
		return false
	}
	a.be.Release(ctx, hs)
	return true
}
