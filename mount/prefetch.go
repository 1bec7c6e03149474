package mount

// Fetching chunks: one flight per chunk however many readers want it, checked
// before it is cached, and bounded background prefetch of the chunks after a
// sequential read.

import (
	"context"
	"fmt"
)

// fetch gets one chunk from the server once, however many readers want it,
// checks it against its key (before any reader sees it: the bytes may serve
// other files holding the same chunk) and caches it.
func (f *FS) fetch(ctx context.Context, p, fileHash string, c ChunkRef) ([]byte, error) {
	key := c.Key(p, fileHash)
	// DoChan, not Do: a reader whose request is interrupted (its ctx is
	// cancelled) returns EINTR at once; the shared fetch, detached from any
	// one reader's ctx, goes on for the others and fills the cache, until
	// the filesystem closes.
	ch := f.flights.DoChan(key, func() (any, error) {
		if !f.bg.add() {
			return nil, errClosed
		}
		defer f.bg.wg.Done()
		data := make([]byte, c.Size)
		// A flight that ended just before this one began (a prefetch) may
		// have brought it after the caller missed it.
		if n, ok := f.o.Cache.ReadAt(c, key, data, 0); ok && int64(n) == c.Size {
			return data, nil
		}
		ctx, cancel := f.opCtx(context.WithoutCancel(ctx))
		defer cancel()
		defer context.AfterFunc(f.bg.ctx, cancel)()
		if f.o.ChunkLocks != nil && validSHA256(key) {
			return f.fetchCoordinated(ctx, p, fileHash, c, key)
		}
		return f.fetchDirect(ctx, p, fileHash, c, key, data)
	})
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("fetch chunk: %w", ctx.Err())
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.([]byte), nil
	}
}

// prefetchAfter fetches the next chunks in the background, a bounded number
// at a time; when all slots are busy it simply does less.
func (f *FS) prefetchAfter(p string, cl ChunkList, from int) {
	for i := from; i < len(cl.Chunks) && i < from+f.o.Prefetch; i++ {
		c := cl.Chunks[i]
		if f.o.Cache.Has(c.Key(p, cl.FileHash)) {
			continue
		}
		select {
		case f.prefetch <- struct{}{}:
		default:
			return
		}
		if !f.bg.add() {
			<-f.prefetch
			return
		}
		go func() {
			defer f.bg.wg.Done()
			defer func() { <-f.prefetch }()
			f.fetch(f.bg.ctx, p, cl.FileHash, c)
		}()
	}
}
