package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"netdisk/apitype"
	"netdisk/internal/atomicfile"
)

// SharedPull is a pull coordinated with the other nodes sharing a cache
// folder (containers or mounts on one host): of all the nodes pulling the
// same content, one transfers it into the cache and the others wait for it
// (seed 003's pull lock on the content), so the server sends it once.
//
// The holder of "pull:content:<file hash>" downloads into the cache as
// <hash>.dl (resumable: <hash>.dl.part), verifies the file hash, renames it
// to <hash> and unlocks with success: every waiter wakes, finds <hash>,
// checks its file hash and copies it. A holder that fails unlocks with failure (or, killed, stops
// heart-beating): the next waiter in FIFO order gets the lock and resumes
// from the part the holder left.

// SharedPullOptions tune SharedPull.
type SharedPullOptions struct {
	Cache string // the shared cache folder
	Node  string // this node's ID, unique among the nodes sharing the cache
	// OnProgress reports the transfer, when this node is the one fetching.
	OnProgress func(file string, done, total int64)
	// OnWait reports this node's standing while it waits (queued at a
	// position, granted, released).
	OnWait func(apitype.LockAnswer)
	// Log receives what the pull does not return: an unavailable lock
	// service (logged once, and its return), a discarded cache entry, an
	// unlock that failed. nil discards it.
	Log *slog.Logger
}

func (o SharedPullOptions) logger() *slog.Logger {
	if o.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Log
}

// SharedPullResult sums up a SharedPull.
type SharedPullResult struct {
	PullResult
	Fetched   bool // this node transferred the file into the cache
	FromCache bool // the file was in the cache (another node fetched it)
	Refused   bool // multi-node mode is off and another node held the lock: pulled directly
}

// PullOp is the lock op of pulls.
const PullOp = apitype.LockOpPull

// errLockLost ends a transfer whose lock passed on (its lease ran out).
var errLockLost = errors.New("pull lock lost: the lease ran out")

// SharedPull downloads the file remote to local through the shared cache.
func (c *Client) SharedPull(ctx context.Context, remote, local string, o SharedPullOptions) (SharedPullResult, error) {
	var res SharedPullResult
	if o.Cache == "" || o.Node == "" {
		return res, errors.New("shared pull: a cache folder and a node ID are needed")
	}
	remote = path.Clean("/" + remote)
	n, err := c.Stat(ctx, remote)
	if err != nil {
		return res, err
	}
	if n.IsDir {
		return res, fmt.Errorf("%s is a directory: --shared-cache pulls one file", remote)
	}
	if local == "" {
		local = path.Base(remote)
	} else if st, err := os.Stat(local); err == nil && st.IsDir() {
		local = filepath.Join(local, path.Base(remote))
	}
	src := sharedSource{hash: n.FileHash, size: n.Size, lockPath: remote,
		fetch: func(ctx context.Context, dst string) (PullResult, error) {
			return c.Pull(ctx, remote, dst, PullOptions{OnProgress: o.OnProgress})
		}}
	cached, refused, err := c.intoSharedCache(ctx, src, o, &res)
	if err != nil {
		return res, err
	}
	if refused {
		pr, err := c.Pull(ctx, remote, local, PullOptions{OnProgress: o.OnProgress})
		res.PullResult, res.Refused = pr, true
		return res, err
	}
	res.FromCache = !res.Fetched
	res.Files = 1
	return res, copyOut(cached, local)
}

// sharedSource is content to bring into a shared cache once per host.
type sharedSource struct {
	hash     string
	size     int64
	lockPath string // a file of the user holding the content: the lock API's proof of access
	// resource is the pull lock's resource; "" means the content's
	// (ContentResource), shared by every node pulling it.
	resource string
	// notHeldRefuses: a lock try answered 404 (lockPath holds other
	// content now) counts as refused instead of failing.
	notHeldRefuses bool
	// fetch downloads the content to dst, resuming what an earlier call
	// left; intoSharedCache verifies it.
	fetch func(ctx context.Context, dst string) (PullResult, error)
}

// intoSharedCache makes <cache>/<hash> hold the content: this node fetches
// it under the pull lock of the content (res.Fetched), or waits for the node
// that does. refused means the lock service did not coordinate (single-node
// mode, or the content is not lockable by the caller): nothing was fetched.
//
// A cache entry is trusted only once its file hash is checked: the folder is
// shared, and a file of the right size with other bytes (planted, or cut
// short and padded by a crash) is discarded and fetched again. When the lock
// service is unavailable (503: its Redis down, say) the node fetches alone,
// as the daemon's own pulls and the mount do; the next try coordinates again.
func (c *Client) intoSharedCache(ctx context.Context, src sharedSource, o SharedPullOptions, res *SharedPullResult) (cached string, refused bool, err error) {
	if err := os.MkdirAll(o.Cache, 0o755); err != nil {
		return "", false, err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return "", false, err
	}
	log := o.logger()
	cached = filepath.Join(o.Cache, src.hash)
	resource := src.resource
	if resource == "" {
		resource = ContentResource(src.hash)
	}
	key := apitype.LockKey(PullOp, resource)
	alone := func(cause error) (string, bool, error) {
		c.lockOutage(log, o.Node, key, cause)
		pr, err := c.fetchVerified(ctx, src, cached, privateDL(cached, o.Node))
		res.PullResult = pr
		if err != nil {
			return "", false, err
		}
		res.Fetched = true
		return cached, false, nil
	}
	granted := false
	for {
		// A granted node claims before anything else (lock package doc):
		// returning without claiming would leave the queue behind it
		// stalled for a lease.
		if !granted {
			if ok, err := trustCached(cached, src, info.ChunkSize, log); err != nil {
				return "", false, err
			} else if ok {
				return cached, false, nil
			}
		}
		// Subscribe before asking: a wake-up between the two is then in
		// the stream.
		stream, err := c.LockEvents(ctx, o.Node, key)
		if err != nil {
			if lockUnavailable(err) && ctx.Err() == nil {
				return alone(err)
			}
			return "", false, err
		}
		a, err := c.TryLock(ctx, PullOp, resource, o.Node, src.lockPath)
		if err != nil {
			stream.Close()
			if src.notHeldRefuses && StatusOf(err) == http.StatusNotFound {
				return "", true, nil
			}
			if lockUnavailable(err) && ctx.Err() == nil {
				return alone(err)
			}
			return "", false, err
		}
		c.lockBack(log, o.Node, key)
		granted = false
		switch a.Status {
		case apitype.LockAcquired:
			stream.Close()
			ok, err := trustCached(cached, src, info.ChunkSize, log)
			if err != nil {
				c.unlockLogged(log, resource, o.Node, false)
				return "", false, err
			}
			if ok { // done by the holder before us: release the waiters at once
				c.unlockLogged(log, resource, o.Node, true)
				return cached, false, nil
			}
			pr, err := c.fetchIntoCache(ctx, src, cached, resource, a, o)
			res.PullResult = pr
			c.unlockLogged(log, resource, o.Node, err == nil)
			if errors.Is(err, errLockLost) && ctx.Err() == nil {
				continue // too slow to heart-beat: wait for whoever has it now
			}
			if err != nil {
				return "", false, err
			}
			res.Fetched = true
			return cached, false, nil
		case apitype.LockRefused:
			stream.Close()
			return "", true, nil
		default: // queued
			if o.OnWait != nil {
				o.OnWait(a)
			}
			granted, err = stream.WaitWhileQueued(o.OnWait)
			stream.Close()
			if ctx.Err() != nil {
				c.unlockLogged(log, resource, o.Node, false) // leave the queue
				return "", false, ctx.Err()
			}
			if err != nil {
				log.Debug("lock event stream ended; asking again", "key", key, "err", err)
			}
		}
	}
}

// lockUnavailable tells a lock service that cannot coordinate now (503: the
// daemon's lock state unreachable; 429: a queue bound) from an answer about
// this pull (404, 403), which fails it.
func lockUnavailable(err error) bool {
	s := StatusOf(err)
	return s == http.StatusServiceUnavailable || s == http.StatusTooManyRequests
}

// lockOutages holds "server node key" of the nodes fetching alone because
// the lock service could not coordinate, so an outage is logged once and its
// end once. It lives outside Client because Clients are copied by value.
var lockOutages sync.Map

func (c *Client) lockOutage(log *slog.Logger, node, key string, err error) {
	if _, was := lockOutages.LoadOrStore(c.Server+" "+node, struct{}{}); !was {
		log.Warn("shared cache: the lock service cannot coordinate pulls; fetching without it until it can",
			"node", node, "key", key, "err", err)
	}
}

func (c *Client) lockBack(log *slog.Logger, node, key string) {
	if _, was := lockOutages.LoadAndDelete(c.Server + " " + node); was {
		log.Info("shared cache: the lock service coordinates pulls again", "node", node, "key", key)
	}
}

// privateDL is where a node fetching without the lock downloads: a name of
// its own (the node's name may hold any character, hence the digest), so two
// uncoordinated nodes never write one file; the verified result is renamed
// into the shared name as usual.
func privateDL(cached, node string) string {
	sum := sha256.Sum256([]byte(node))
	return cached + "." + hex.EncodeToString(sum[:8]) + ".dl"
}

// UnlockDetached unlocks even when the caller's context is cancelled (an
// interrupted holder hands over at once instead of after its lease); a lock
// already lost (409) is no news and returns nil.
func (c *Client) UnlockDetached(op, resource, node string, success bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Unlock(ctx, op, resource, node, success); err != nil && StatusOf(err) != http.StatusConflict {
		return fmt.Errorf("unlock %s: %w", resource, err)
	}
	return nil
}

func (c *Client) unlockLogged(log *slog.Logger, resource, node string, success bool) {
	if err := c.UnlockDetached(PullOp, resource, node, success); err != nil {
		log.Warn("shared cache: unlock", "err", err)
	}
}

// fetchIntoCache downloads the content into the cache under its file hash
// while heart-beating the lock; losing the lock cancels the transfer.
func (c *Client) fetchIntoCache(ctx context.Context, src sharedSource, cached, resource string, a apitype.LockAnswer, o SharedPullOptions) (PullResult, error) {
	lost, stop := c.KeepLock(PullOp, resource, o.Node, time.Duration(a.LeaseMs)*time.Millisecond)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-lost:
			cancel(errLockLost)
		case <-ctx.Done():
		}
	}()
	pr, err := c.fetchVerified(ctx, src, cached, cached+".dl")
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, errLockLost) {
		return pr, cause
	}
	return pr, err
}

// fetchVerified downloads the content to dl, checks its file hash and
// renames it to cached.
func (c *Client) fetchVerified(ctx context.Context, src sharedSource, cached, dl string) (PullResult, error) {
	info, err := c.Info(ctx)
	if err != nil {
		return PullResult{}, err
	}
	pr, err := src.fetch(ctx, dl)
	if err != nil {
		return pr, err
	}
	// The remote may have changed since it was looked up: the cache name
	// promises this content.
	if h, err := hashFile(dl, info.ChunkSize); err != nil || h != src.hash {
		os.Remove(dl)
		if err != nil {
			return pr, err
		}
		return pr, fmt.Errorf("%s changed while it was pulled: try again", src.lockPath)
	}
	return pr, atomicfile.Rename(dl, cached)
}

// trustCachedNow is trustCached with the server's chunk size.
func (c *Client) trustCachedNow(ctx context.Context, cached string, src sharedSource, log *slog.Logger) (bool, error) {
	info, err := c.Info(ctx)
	if err != nil {
		return false, err
	}
	return trustCached(cached, src, info.ChunkSize, SharedPullOptions{Log: log}.logger())
}

// trustCached reports whether cached holds the content: the right size and
// file hash. An entry that does not is removed (it would be served as the
// content), so the caller fetches it again.
func trustCached(cached string, src sharedSource, chunkSize int64, log *slog.Logger) (bool, error) {
	st, err := os.Stat(cached)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if st.Mode().IsRegular() && st.Size() == src.size {
		h, err := hashFile(cached, chunkSize)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		if h == src.hash {
			return true, nil
		}
	}
	log.Warn("shared cache: discarding an entry that does not hold its content", "file", cached,
		"size", st.Size(), "want", src.size)
	if err := os.Remove(cached); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return false, nil
}

func hashFile(p string, chunkSize int64) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := newStreamHasher(chunkSize)
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return h.Sum(), nil
}

// copyOut copies the cached file to local atomically and durably: the cache
// stays the cache's, whatever is done to local.
func copyOut(cached, local string) error {
	src, err := os.Open(cached)
	if err != nil {
		return err
	}
	defer src.Close()
	return atomicfile.Write(local, 0o644, func(w io.Writer) error {
		_, err := io.Copy(w, src)
		return err
	})
}
