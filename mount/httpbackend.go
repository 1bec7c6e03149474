package mount

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"netdisk/chunker"
	"netdisk/client"
)

// ErrStale is returned by ReadRange when the file changed since its chunk
// list was fetched.
var ErrStale = errors.New("file changed on the server")

// HTTPBackend is the Backend over a daemon: /api/v1/fs/… for metadata,
// WebDAV GET with Range and If-Match for chunk bytes, and the client's upload
// for writes.
type HTTPBackend struct {
	C *client.Client
	// RedialFor is how long a request whose connection cannot be made
	// (server restarting, refused, unreachable) is tried again, within its
	// own deadline; 0 means 30 s. The mount sets it to --timeout.
	RedialFor time.Duration

	infoOnce  sync.Once
	chunkSize int64
}

var _ Backend = (*HTTPBackend)(nil)

// NewHTTPBackend wraps c. Connections time out instead of hanging when the
// server is unreachable; each FUSE operation adds its own deadline.
func NewHTTPBackend(c *client.Client) *HTTPBackend {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.ResponseHeaderTimeout = 2 * time.Minute // a merge of a large file may take a while
	tr.MaxIdleConnsPerHost = 16
	cc := *c
	b := &HTTPBackend{C: &cc}
	cc.HTTP = &http.Client{Transport: &redial{next: tr, b: b}}
	return b
}

// redial retries a request whose connection could not be made, with
// backoff, until its deadline or the backend's RedialFor: a refused
// connection is a server restarting more often than one gone, and the
// request never reached it, so any method may be sent again. The caller
// then sees EIO after --timeout, not ECONNREFUSED at once.
type redial struct {
	next http.RoundTripper
	b    *HTTPBackend
}

func (r *redial) RoundTrip(req *http.Request) (*http.Response, error) {
	limit := r.b.RedialFor
	if limit <= 0 {
		limit = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(req.Context(), limit)
	defer cancel()
	wait := 50 * time.Millisecond
	for {
		resp, err := r.next.RoundTrip(req)
		var oe *net.OpError
		if err == nil || !errors.As(err, &oe) || oe.Op != "dial" || (req.Body != nil && req.GetBody == nil) {
			return resp, err
		}
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

type apiNode struct {
	Path     string `json:"path"`
	Name     string `json:"name"`
	IsDir    bool   `json:"isDir"`
	Size     int64  `json:"size"`
	Mode     uint32 `json:"mode"`
	MTime    string `json:"mtime"`
	FileHash string `json:"fileHash"`
}

func (n apiNode) entry() Entry {
	t, _ := time.Parse(time.RFC3339Nano, n.MTime)
	// The server reports every node's bits, its defaults resolved.
	return Entry{Name: n.Name, IsDir: n.IsDir, Size: n.Size, ModTime: t, Mode: n.Mode&0o7777 | ModeValid, FileHash: n.FileHash}
}

func pq(p string) url.Values { return url.Values{"path": {p}} }

func (b *HTTPBackend) Stat(ctx context.Context, p string) (Entry, error) {
	var n apiNode
	err := b.C.JSON(ctx, http.MethodGet, "/api/v1/fs/stat", pq(p), nil, &n)
	return n.entry(), err
}

func (b *HTTPBackend) List(ctx context.Context, dir string) ([]Entry, error) {
	var out struct {
		Entries []apiNode `json:"entries"`
	}
	if err := b.C.JSON(ctx, http.MethodGet, "/api/v1/fs/list", pq(dir), nil, &out); err != nil {
		return nil, err
	}
	es := make([]Entry, len(out.Entries))
	for i, n := range out.Entries {
		es[i] = n.entry()
	}
	return es, nil
}

func (b *HTTPBackend) ChunkList(ctx context.Context, p string) (ChunkList, error) {
	out, err := b.C.Chunks(ctx, p)
	if err != nil {
		return ChunkList{}, err
	}
	cl := ChunkList{FileHash: out.FileHash, Size: out.Size, ModTime: out.ModTime}
	for _, c := range out.Chunks {
		cl.Chunks = append(cl.Chunks, ChunkRef{Offset: c.Offset, Size: c.Size, MD5: c.MD5, SHA256: c.SHA256})
	}
	return cl, nil
}

// davPath escapes each segment of p under /dav.
func davPath(p string) string {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/dav/" + strings.Join(segs, "/")
}

func (b *HTTPBackend) ReadRange(ctx context.Context, p, fileHash string, off int64, dest []byte) error {
	if len(dest) == 0 {
		return nil
	}
	req, err := b.C.NewRequest(ctx, http.MethodGet, davPath(p), nil, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+int64(len(dest))-1))
	req.Header.Set("If-Match", `"`+fileHash+`"`)
	resp, err := b.C.Do(req)
	if err != nil {
		if client.StatusOf(err) == http.StatusPreconditionFailed {
			return ErrStale
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent && !(resp.StatusCode == http.StatusOK && off == 0) {
		return fmt.Errorf("range read of %s: unexpected status %d", p, resp.StatusCode)
	}
	if _, err := io.ReadFull(resp.Body, dest); err != nil {
		return fmt.Errorf("range read of %s: %w", p, err)
	}
	return nil
}

// smallLimit: files below it are sent in one request. It is well under
// the server's limit on purpose: a file cut in chunks whose content the
// server already holds sends no bytes (instant upload), which is worth a
// few round trips from a few hundred KiB on.
const smallLimit = 256 << 10

func (b *HTTPBackend) Upload(ctx context.Context, r io.ReaderAt, size int64, hashes []string, p string) (Entry, error) {
	o := client.PushOptions{Concurrency: uploadConcurrency, SmallFileLimit: smallLimit,
		Pipeline: chunker.Options{ChunkSize: b.ChunkSize(), Hashes: hashes, Retries: 3}}
	if _, err := b.C.PushContent(ctx, r, size, p, o); err != nil {
		return Entry{}, err
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

func (b *HTTPBackend) SendAhead(ctx context.Context, p string, data []byte, hash string) (string, error) {
	return b.C.SendAhead(ctx, p, data, hash)
}

// Release abandons the sessions that carried chunks sent ahead; failures
// only leave them to the server's expiry.
func (b *HTTPBackend) Release(ctx context.Context, ids []string) {
	for _, id := range ids {
		b.C.Abort(ctx, id)
	}
}

func (b *HTTPBackend) Mkdir(ctx context.Context, p string, mode uint32) error {
	return b.C.JSON(ctx, http.MethodPost, "/api/v1/fs/mkdir", nil, map[string]any{"path": p, "mode": mode}, nil)
}

func (b *HTTPBackend) Remove(ctx context.Context, p string) error {
	return b.C.JSON(ctx, http.MethodDelete, "/api/v1/fs", url.Values{"path": {p}}, nil, nil)
}

func (b *HTTPBackend) Rename(ctx context.Context, src, dst string, overwrite bool) error {
	return b.C.JSON(ctx, http.MethodPost, "/api/v1/fs/move", nil, map[string]any{"from": src, "to": dst, "overwrite": overwrite}, nil)
}

func (b *HTTPBackend) SetAttr(ctx context.Context, p string, a Attrs) (Entry, error) {
	req := map[string]any{"path": p}
	if a.Mode != nil {
		req["mode"] = *a.Mode
	}
	if a.ModTime != nil {
		req["mtime"] = a.ModTime.UTC().Format(time.RFC3339Nano)
	}
	var n apiNode
	err := b.C.JSON(ctx, http.MethodPost, "/api/v1/fs/setattr", nil, req, &n)
	return n.entry(), err
}

// Quota is GET /api/v1/quota; a server without it reports unlimited space.
func (b *HTTPBackend) Quota(ctx context.Context) (Quota, error) {
	q, err := b.C.Quota(ctx)
	if err != nil {
		if s := client.StatusOf(err); s == http.StatusNotFound || s == http.StatusMethodNotAllowed {
			return Quota{}, nil
		}
		return Quota{}, err
	}
	return Quota{Total: q.Total, Used: q.Finished + q.Unfinished}, nil
}
