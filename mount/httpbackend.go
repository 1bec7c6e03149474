package mount

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"netdisk/apitype"
	"netdisk/chunker"
	"netdisk/client"
	"netdisk/errs"
)

// ErrStale is returned by ReadRange when the file changed since its chunk
// list was fetched.
var ErrStale = client.ErrChanged

// HTTPBackend is the Backend over a daemon, every call through the client:
// its file operations (/api/v1/fs/…) for metadata, its ranged WebDAV GET
// (If-Match) for chunk bytes, and its upload for writes.
type HTTPBackend struct {
	C *client.Client
	// RedialFor is how long a request whose connection cannot be made
	// (server restarting, refused, unreachable) is tried again, within its
	// own deadline; 0 means 30 s. The mount sets it to at most 5 s: past
	// it, the server counts as lost (link.go) and calls stop waiting.
	RedialFor time.Duration

	infoOnce  sync.Once
	chunkSize int64
	// dialFailed says the last request sent could not connect (link.go
	// asks, for calls whose own error is their deadline).
	dialFailed atomic.Bool
}

// LastDialFailed reports whether the last request sent could not connect.
func (b *HTTPBackend) LastDialFailed() bool { return b.dialFailed.Load() }

var _ Backend = (*HTTPBackend)(nil)

// NewHTTPBackend wraps c. Connections time out instead of hanging when the
// server is unreachable; each FUSE operation adds its own deadline.
func NewHTTPBackend(c *client.Client) *HTTPBackend {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.ResponseHeaderTimeout = 2 * time.Minute // a merge of a large file may take a while
	tr.MaxIdleConnsPerHost = 16
	tr.HTTP2 = client.HTTP2Config()
	if c.TLS != nil {
		tr.TLSClientConfig = c.TLS.Clone()
	}
	cc := *c
	b := &HTTPBackend{C: &cc}
	cc.HTTP = &http.Client{Transport: &redial{next: tr, b: b}}
	return b
}

// redial retries a request whose connection could not be made, with
// backoff, until its deadline or the backend's RedialFor: a refused
// connection is a server restarting more often than one gone, and the
// request never reached it, so any method may be sent again. The caller
// then sees the dial's error (EHOSTDOWN, Errno) after RedialFor, not
// ECONNREFUSED at once. A probe of a lost server (link.go) is sent once.
type redial struct {
	next http.RoundTripper
	b    *HTTPBackend
}

func (r *redial) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Context().Value(noRedialKey{}) != nil {
		return r.next.RoundTrip(req)
	}
	limit := r.b.RedialFor
	if limit <= 0 {
		limit = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(req.Context(), limit)
	defer cancel()
	wait := 50 * time.Millisecond
	var lastDial error
	for {
		resp, err := r.next.RoundTrip(req)
		var oe *net.OpError
		if err != nil && lastDial != nil && req.Context().Err() != nil {
			// The deadline cut an attempt: the server never answered
			// because it could not be reached, which is what to report.
			return nil, fmt.Errorf("%w (%w)", lastDial, err)
		}
		isDial := err != nil && errors.As(err, &oe) && oe.Op == "dial"
		if err == nil || isDial {
			r.b.dialFailed.Store(isDial)
		}
		if !isDial || (req.Body != nil && req.GetBody == nil) {
			return resp, err
		}
		lastDial = err
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
		if req.GetBody != nil {
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, gerr
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
}

// entryOf converts a node of the API; the server reports every node's
// bits, its defaults resolved.
func entryOf(n apitype.Node) Entry {
	return Entry{Name: n.Name, IsDir: n.IsDir, Size: n.Size, ModTime: n.MTime.Time, Mode: n.Mode&0o7777 | ModeValid, FileHash: n.FileHash, Target: n.Target}
}

func (b *HTTPBackend) Stat(ctx context.Context, p string) (Entry, error) {
	n, err := b.C.Stat(ctx, p)
	return entryOf(n), err
}

func (b *HTTPBackend) ListPage(ctx context.Context, dir, cursor string, limit int) ([]Entry, string, error) {
	l, err := b.C.ListPage(ctx, dir, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	es := make([]Entry, len(l.Entries))
	for i, n := range l.Entries {
		es[i] = entryOf(n)
	}
	return es, l.Next, nil
}

func (b *HTTPBackend) ChunkList(ctx context.Context, p string) (ChunkList, error) {
	out, err := b.C.Chunks(ctx, p)
	if err != nil {
		return ChunkList{}, err
	}
	cl := ChunkList{FileHash: out.FileHash, Size: out.Size, ModTime: out.ModTime.Time}
	for _, c := range out.Chunks {
		cl.Chunks = append(cl.Chunks, ChunkRef{Offset: c.Offset, Size: c.Size, MD5: c.MD5, SHA256: c.SHA256})
	}
	return cl, nil
}

func (b *HTTPBackend) ReadRange(ctx context.Context, p, fileHash string, off int64, dest []byte) error {
	return b.C.ReadAt(ctx, p, fileHash, off, dest)
}

// smallLimit: files below it are sent in one request. It is well under
// the server's limit on purpose: a file cut in chunks whose content the
// server already holds sends no bytes (instant upload), which is worth a
// few round trips from a few hundred KiB on.
const smallLimit = 256 << 10

func (b *HTTPBackend) Upload(ctx context.Context, r io.ReaderAt, size int64, sums []chunker.Sum, p string, a Attrs) (Entry, error) {
	o := client.PushOptions{Concurrency: uploadConcurrency, SmallFileLimit: smallLimit,
		Pipeline: chunker.Options{ChunkSize: b.ChunkSize(), Sums: sums, Retries: 3},
		Attrs:    client.Attrs{Mode: a.Mode}}
	if a.ModTime != nil {
		o.Attrs.ModTime = *a.ModTime
	}
	res, err := b.C.PushContent(ctx, r, size, p, o)
	if err != nil {
		return Entry{}, err
	}
	if res.MTime != nil && res.Mode != nil {
		// The one-request upload says what it committed: no stat needed.
		return Entry{Name: path.Base(p), Size: res.Size, ModTime: res.MTime.Time, Mode: *res.Mode&0o7777 | ModeValid, FileHash: res.FileHash}, nil
	}
	return b.Stat(ctx, p)
}

// uploadConcurrency is the chunk calls in flight per file: enough to keep
// the server's disk busy while a request crosses the network.
const uploadConcurrency = 8

// ChunkSize is the server's, as GET /api/v1/info said at the first ask.
func (b *HTTPBackend) ChunkSize() int64 {
	b.infoOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if info, err := b.C.Info(ctx); err == nil {
			b.chunkSize = info.ChunkSize
		}
	})
	return b.chunkSize
}

func (b *HTTPBackend) SendAhead(ctx context.Context, p string, data []byte, sum chunker.Sum) (string, error) {
	return b.C.SendAhead(ctx, p, data, sum)
}

// Release abandons the sessions that carried chunks sent ahead; failures
// only leave them to the server's expiry.
func (b *HTTPBackend) Release(ctx context.Context, ids []string) {
	for _, id := range ids {
		b.C.Abort(ctx, id)
	}
}

func (b *HTTPBackend) Mkdir(ctx context.Context, p string, mode uint32) error {
	_, err := b.C.MkdirMode(ctx, p, mode)
	return err
}

func (b *HTTPBackend) Symlink(ctx context.Context, p, target string) (Entry, error) {
	n, err := b.C.Symlink(ctx, p, target)
	return entryOf(n), err
}

func (b *HTTPBackend) Remove(ctx context.Context, p string) error {
	return b.C.Remove(ctx, p, false)
}

func (b *HTTPBackend) Rename(ctx context.Context, src, dst string, overwrite bool) error {
	_, err := b.C.Move(ctx, src, dst, overwrite)
	return err
}

func (b *HTTPBackend) SetAttr(ctx context.Context, p string, a Attrs) (Entry, error) {
	n, err := b.C.SetAttr(ctx, p, a.ModTime, a.Mode)
	return entryOf(n), err
}

// Quota is GET /api/v1/quota; a server without it reports unlimited space.
func (b *HTTPBackend) Quota(ctx context.Context) (Quota, error) {
	q, err := b.C.Quota(ctx)
	if err != nil {
		if client.KindOf(err) == errs.NotFound { // a server older than the endpoint
			return Quota{}, nil
		}
		return Quota{}, err
	}
	return Quota{Total: q.Total, Used: q.Finished + q.Metadata, Uploading: q.Uploading}, nil
}
