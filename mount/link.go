package mount

// The mount's view of whether the server can be reached. Without it every
// call of an unreachable server waits out its deadline (30 s by default) on
// refused connections, and ls, stat and df hang one after the other. As
// rclone's and Seafile's drives do, the mount instead notices the loss once
// (one log line), then answers from what it holds — attributes and listings
// as last seen, chunk lists of files it opened, cached chunks, the last
// quota, files written with write-back — and fails the rest at once with
// EHOSTDOWN (Errno), until the server answers again (one log line again),
// when write-back uploads what it kept.
//
// While the server is lost, one call at a time probes it (a stat of "/",
// tried once, not redialled) when the backoff since the last probe is over,
// and a goroutine probes on the same schedule when nothing else asks, so
// queued uploads go up without waiting for a user. Calls arriving while a
// probe runs wait for its outcome. The schedule reads the injected clock.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"netdisk/chunker"
	"netdisk/client"
)

// ErrOffline answers, at once, a call that needs the server while the mount
// knows it unreachable.
var ErrOffline = errors.New("server unreachable (offline)")

// Probe schedule: the first probe a second after the loss, then doubling up
// to probeMax; a probe gives up after probeTimeout (a dial that is dropped,
// not refused).
const (
	probeMin     = time.Second
	probeMax     = 15 * time.Second
	probeTimeout = 3 * time.Second
)

// unreachable says err is a failure to reach the server at all (refused,
// no route, no such host, a dial that timed out): the request never reached
// it. A request that reached it and then failed says nothing of the kind.
func unreachable(err error) bool {
	if err == nil || errors.Is(err, ErrOffline) {
		return err != nil
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	var de *net.DNSError
	return errors.As(err, &de)
}

// link is a Backend that knows whether the server is reachable.
type link struct {
	inner Backend
	now   func() time.Time
	log   *slog.Logger
	bg    *background
	onUp  func() // called (no lock held) when the server answers again

	mu      sync.Mutex
	down    bool
	since   time.Time     // when the loss was noticed
	next    time.Time     // when the next probe is due
	backoff time.Duration // the wait before next
	probing chan struct{} // closed when the running probe ends; nil if none
}

var _ Backend = (*link)(nil)

// admit lets a call through when the server is reachable, or when it is
// not but a probe (run here, or by another caller) has just found it back;
// else it returns ErrOffline at once.
func (l *link) admit(ctx context.Context) error {
	l.mu.Lock()
	for {
		if !l.down {
			l.mu.Unlock()
			return nil
		}
		if wait := l.probing; wait != nil {
			l.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return ctx.Err()
			}
			l.mu.Lock()
			if l.down {
				l.mu.Unlock()
				return ErrOffline
			}
			continue
		}
		if l.now().Before(l.next) {
			l.mu.Unlock()
			return ErrOffline
		}
		done := make(chan struct{})
		l.probing = done
		l.mu.Unlock()
		pctx, cancel := context.WithTimeout(noRedial(context.WithoutCancel(ctx)), probeTimeout)
		_, err := l.inner.Stat(pctx, "/")
		cancel()
		l.mu.Lock()
		l.probing = nil
		close(done)
		if unreachable(err) {
			l.backoff = min(2*l.backoff, probeMax)
			l.next = l.now().Add(l.backoff)
			l.mu.Unlock()
			return ErrOffline
		}
		l.mu.Unlock()
		l.observe(err)
		l.mu.Lock()
	}
}

// observe takes what a call's outcome says of the server: unreachable, or
// answering (no error, or an error of the server's own).
func (l *link) observe(err error) {
	switch {
	case errors.Is(err, ErrOffline):
	case unreachable(err):
		l.mu.Lock()
		if l.down {
			l.mu.Unlock()
			return
		}
		now := l.now()
		l.down, l.since, l.backoff = true, now, probeMin
		l.next = now.Add(l.backoff)
		l.mu.Unlock()
		l.log.Warn("mount: server unreachable; answering from cached attributes, listings and chunks and failing the rest at once (host is down) until it is back",
			"err", logErr(err))
		l.startProber()
	case err == nil || client.StatusOf(err) != 0:
		l.mu.Lock()
		if !l.down {
			l.mu.Unlock()
			return
		}
		l.down = false
		lost := l.now().Sub(l.since)
		l.mu.Unlock()
		l.log.Info("mount: server reachable again", "unreachable_for", lost.Round(time.Second).String())
		if l.onUp != nil {
			l.onUp()
		}
	}
}

// isDown reports whether the server is known unreachable.
func (l *link) isDown() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.down
}

// startProber probes on schedule while the server is lost, so that what
// write-back holds goes up once it is back even if nobody uses the mount.
// Its waits are real time; whether a probe is due is the injected clock's.
func (l *link) startProber() {
	if l.bg == nil || !l.bg.add() {
		return
	}
	go func() {
		defer l.bg.wg.Done()
		for {
			l.mu.Lock()
			down, wait := l.down, l.next.Sub(l.now())
			l.mu.Unlock()
			if !down {
				return
			}
			t := time.NewTimer(min(max(wait, 100*time.Millisecond), probeMin))
			select {
			case <-l.bg.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			l.admit(l.bg.ctx)
		}
	}()
}

// call runs one call of the inner backend through the link.
func call[T any](l *link, ctx context.Context, f func() (T, error)) (T, error) {
	if err := l.admit(ctx); err != nil {
		var zero T
		return zero, err
	}
	v, err := f()
	if err != nil && !unreachable(err) && errors.Is(err, context.DeadlineExceeded) && l.lastDialFailed() {
		// A call with retries of its own (an upload) reports its deadline,
		// not the refused connections that used it up.
		err = fmt.Errorf("%w: %w", ErrOffline, err)
		l.observe(errUnreachable)
	} else {
		l.observe(err)
	}
	return v, err
}

// errUnreachable stands for a failure to connect that a call's own error
// does not show.
var errUnreachable = &net.OpError{Op: "dial", Err: errors.New("connection failed")}

// lastDialFailed asks the inner backend, if it can say, whether its last
// attempt to reach the server failed to connect.
func (l *link) lastDialFailed() bool {
	d, ok := l.inner.(interface{ LastDialFailed() bool })
	return ok && d.LastDialFailed()
}

func (l *link) Stat(ctx context.Context, p string) (Entry, error) {
	return call(l, ctx, func() (Entry, error) { return l.inner.Stat(ctx, p) })
}

func (l *link) ListPage(ctx context.Context, dir, cursor string, limit int) ([]Entry, string, error) {
	var next string
	es, err := call(l, ctx, func() (es []Entry, err error) {
		es, next, err = l.inner.ListPage(ctx, dir, cursor, limit)
		return es, err
	})
	return es, next, err
}

func (l *link) ChunkList(ctx context.Context, p string) (ChunkList, error) {
	return call(l, ctx, func() (ChunkList, error) { return l.inner.ChunkList(ctx, p) })
}

func (l *link) ReadRange(ctx context.Context, p, fileHash string, off int64, dest []byte) error {
	_, err := call(l, ctx, func() (struct{}, error) { return struct{}{}, l.inner.ReadRange(ctx, p, fileHash, off, dest) })
	return err
}

func (l *link) Upload(ctx context.Context, r io.ReaderAt, size int64, sums []chunker.Sum, p string, a Attrs) (Entry, error) {
	return call(l, ctx, func() (Entry, error) { return l.inner.Upload(ctx, r, size, sums, p, a) })
}

func (l *link) ChunkSize() int64 { return l.inner.ChunkSize() }

func (l *link) SendAhead(ctx context.Context, p string, data []byte, sum chunker.Sum) (string, error) {
	return call(l, ctx, func() (string, error) { return l.inner.SendAhead(ctx, p, data, sum) })
}

// Release leaves the sessions to the server's expiry while it is lost.
func (l *link) Release(ctx context.Context, handles []string) {
	if l.isDown() {
		return
	}
	l.inner.Release(ctx, handles)
}

func (l *link) Mkdir(ctx context.Context, p string, mode uint32) error {
	_, err := call(l, ctx, func() (struct{}, error) { return struct{}{}, l.inner.Mkdir(ctx, p, mode) })
	return err
}

func (l *link) Symlink(ctx context.Context, p, target string) (Entry, error) {
	return call(l, ctx, func() (Entry, error) { return l.inner.Symlink(ctx, p, target) })
}

func (l *link) Remove(ctx context.Context, p string) error {
	_, err := call(l, ctx, func() (struct{}, error) { return struct{}{}, l.inner.Remove(ctx, p) })
	return err
}

func (l *link) Rename(ctx context.Context, src, dst string, overwrite bool) error {
	_, err := call(l, ctx, func() (struct{}, error) { return struct{}{}, l.inner.Rename(ctx, src, dst, overwrite) })
	return err
}

func (l *link) SetAttr(ctx context.Context, p string, a Attrs) (Entry, error) {
	return call(l, ctx, func() (Entry, error) { return l.inner.SetAttr(ctx, p, a) })
}

func (l *link) Quota(ctx context.Context) (Quota, error) {
	return call(l, ctx, func() (Quota, error) { return l.inner.Quota(ctx) })
}

// offline says err is the server being out of reach (now, or known since):
// the caller answers from what the mount holds where it can.
func offline(err error) bool { return unreachable(err) }

type noRedialKey struct{}

// noRedial marks a request to be tried once: a probe wants to know whether
// the server answers now, not to wait for it.
func noRedial(ctx context.Context) context.Context {
	return context.WithValue(ctx, noRedialKey{}, true)
}
