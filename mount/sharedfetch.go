package mount

import (
	"context"
	"log/slog"
	"time"

	"netdisk/apitype"
	"netdisk/client"
)

// Mounts sharing one --cache-dir (several mounts, containers on one host)
// fetch each chunk once between them: before fetching a chunk a mount takes
// the server's pull lock on it (seed 003, resource chunk:<sha-256>); the
// others wait their turn and then find the chunk in the shared cache.

// ChunkLocker coordinates chunk fetches with other mounts sharing the cache.
type ChunkLocker interface {
	// Take returns done != nil when this mount should fetch the chunk (call
	// done with the outcome once the chunk is in the cache, or failed), and
	// done == nil when it was woken because another mount finished or
	// gave up: look in the cache, and Take again if it is not there.
	Take(ctx context.Context, path, sha256 string) (done func(success bool), err error)
}

// fetchCoordinated is fetch's work under the chunk's lock.
func (f *FS) fetchCoordinated(ctx context.Context, p, fileHash string, c ChunkRef, key string) ([]byte, error) {
	data := make([]byte, c.Size)
	for {
		done, err := f.o.ChunkLocks.Take(ctx, p, key)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			// The lock service is unreachable or refuses: fetch alone, as a
			// mount without a shared cache does.
			f.o.Logger.Debug("chunk lock unavailable, fetching alone", "chunk", key, "err", err)
			return f.fetchDirect(ctx, p, fileHash, c, key, data)
		}
		if n, ok := f.o.Cache.ReadAt(c, key, data, 0); ok && int64(n) == c.Size {
			if done != nil {
				done(true)
			}
			return data, nil
		}
		if done == nil {
			continue
		}
		out, err := f.fetchDirect(ctx, p, fileHash, c, key, data)
		if err == nil {
			// On disk before the others are woken to look for it.
			f.o.Cache.Wait()
		}
		done(err == nil)
		return out, err
	}
}

// fetchDirect reads the chunk from the server, checks it and caches it.
func (f *FS) fetchDirect(ctx context.Context, p, fileHash string, c ChunkRef, key string, data []byte) ([]byte, error) {
	if err := f.o.Backend.ReadRange(ctx, p, fileHash, c.Offset, data); err != nil {
		return nil, err
	}
	if err := CheckChunk(c, key, data); err != nil {
		return nil, err
	}
	if err := f.o.Cache.Put(c, key, data); err != nil {
		return nil, err
	}
	return data, nil
}

// HTTPChunkLocks takes chunk locks from the daemon as node Node.
type HTTPChunkLocks struct {
	C    *client.Client
	Node string
	Log  *slog.Logger
}

var _ ChunkLocker = (*HTTPChunkLocks)(nil)

// Take implements ChunkLocker. A mount woken with the lock granted claims
// it before returning (done != nil), even though the chunk may well be in
// the cache by then: the holder before it may have cached the chunk and died
// before unlocking. fetchCoordinated then unlocks with success at once, so
// every mount behind it in the queue is woken instead of each waiting a
// lease for the one before it to claim.
func (l *HTTPChunkLocks) Take(ctx context.Context, path, sha256 string) (func(bool), error) {
	res := "chunk:" + sha256
	for {
		done, granted, err := l.take(ctx, path, res)
		if err != nil || done != nil || !granted {
			return done, err
		}
	}
}

// take asks for the lock once: done when acquired (or refused: fetch alone),
// granted when woken as the queue's new head (ask again to claim).
func (l *HTTPChunkLocks) take(ctx context.Context, path, res string) (done func(bool), granted bool, err error) {
	stream, err := l.C.LockEvents(ctx, l.Node, apitype.LockKey(client.PullOp, res))
	if err != nil {
		return nil, false, err
	}
	defer stream.Close()
	a, err := l.C.TryLock(ctx, client.PullOp, res, l.Node, path)
	if err != nil {
		return nil, false, err
	}
	switch a.Status {
	case apitype.LockAcquired:
		_, stop := l.C.KeepLock(client.PullOp, res, l.Node, time.Duration(a.LeaseMs)*time.Millisecond)
		return func(success bool) {
			stop()
			l.unlock(res, success)
		}, false, nil
	case apitype.LockRefused:
		return func(bool) {}, false, nil // multi-node mode off: fetch alone
	}
	// Reading the stream ends with ctx (the stream's request context).
	granted, err = stream.WaitWhileQueued(nil)
	if ctx.Err() != nil {
		l.unlock(res, false) // leave the queue
		return nil, false, ctx.Err()
	} else if err != nil {
		l.logger().Debug("chunk lock stream ended; asking again", "resource", res, "err", err)
	}
	return nil, granted, nil
}

func (l *HTTPChunkLocks) unlock(res string, success bool) {
	if err := l.C.UnlockDetached(client.PullOp, res, l.Node, success); err != nil {
		l.logger().Warn("chunk lock", "err", err)
	}
}

func (l *HTTPChunkLocks) logger() *slog.Logger {
	if l.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Log
}
