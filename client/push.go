package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"netdisk/apitype"
	"netdisk/chunker"
)

// PushEvent reports the progress of Push: one file starting or ending, or a
// pipeline event of the file being uploaded in chunks.
type PushEvent struct {
	Type    string              `json:"type"` // "start", "pipeline", "done", "error"
	Local   string              `json:"local"`
	Remote  string              `json:"remote"`
	Size    int64               `json:"size"`
	Small   bool                `json:"small,omitempty"` // below the small-file limit: one request (or instant)
	Instant bool                `json:"instant,omitempty"`
	Event   *chunker.Event      `json:"pipeline,omitempty"`
	Result  *apitype.FileResult `json:"result,omitempty"`
	Error   string              `json:"error,omitempty"`
}

// PushOptions tune Push; the zero value is usable.
type PushOptions struct {
	// Concurrency is the chunk queue limit per file and the number of small
	// files sent at once (default 3).
	Concurrency int
	// SmallFileLimit: Push sends files below it in one request, unless the
	// server holds the content already (asked by file hash first: then the
	// file is an instant upload). 0 asks the server; a negative value sends
	// everything in chunks.
	SmallFileLimit int64
	// Pipeline is the template for each file's chunker options (retries,
	// backoff, sleep); ChunkSize, Concurrency, Uploaded and OnEvent are set by Push.
	Pipeline chunker.Options
	// OnEvent observes progress; calls are serialized.
	OnEvent func(PushEvent)
	// Attrs, for PushContent's one-request upload (below SmallFileLimit),
	// are stored in the same commit; the chunked path ignores them.
	Attrs Attrs
	// Sync chooses what Push skips and deletes.
	Sync SyncOptions
}

// PushFile is one file Push sends. A non-zero ModTime is stored with the
// content, and Mode with it (the local file's; the mount and PushContent
// leave both zero).
type PushFile struct {
	Local, Remote string
	Size          int64
	ModTime       time.Time
	Mode          uint32
}

// attrs are f's attributes as the one-request upload takes them.
func (f PushFile) attrs() Attrs {
	if f.ModTime.IsZero() {
		return Attrs{}
	}
	mode := f.Mode
	return Attrs{ModTime: f.ModTime, Mode: &mode}
}

// PushResult sums up a Push.
type PushResult struct {
	Files, Failed, Instant int
	BytesSent, BytesSkip   int64
	// Unchanged files (PushPlan.Skip and Touch) and their bytes, and the
	// remote paths a mirror deleted.
	Skipped      int
	SkippedBytes int64
	Deleted      int
	Links        int // symbolic links created
}

func isEmptyDir(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return false, err
}

// serialized returns fn with its calls made one at a time (the chunk
// workers report concurrently), or a no-op when fn is nil.
func serialized(fn func(PushEvent)) func(PushEvent) {
	var mu sync.Mutex
	return func(e PushEvent) {
		if fn != nil {
			mu.Lock()
			fn(e)
			mu.Unlock()
		}
	}
}

// Push sends a file or a whole directory (see PlanPush): files unchanged
// by o.Sync's measure are skipped. Small files are checked by hash and,
// unless the server holds them (instant), sent in one request, N at a time;
// larger ones go through the seed-000 pipeline, one after the other. Failed
// calls are retried with backoff. Every file is attempted; the error
// reports the failures.
func (c *Client) Push(ctx context.Context, local, remote string, o PushOptions) (PushResult, error) {
	p, err := c.PlanPush(ctx, local, remote, o.Sync)
	if err != nil {
		return PushResult{}, err
	}
	return c.PushPlanned(ctx, p, o)
}

// PushPlanned carries out p: deletes first (a mirror on a full quota makes
// room before it sends), then the files, then the attributes of the
// unchanged content whose mtime or mode differ, and last the directories'
// attributes, deepest first, once nothing more is written into them.
func (c *Client) PushPlanned(ctx context.Context, p PushPlan, o PushOptions) (PushResult, error) {
	if err := c.RemoveAll(ctx, p.Delete); err != nil {
		return PushResult{}, err
	}
	if err := c.abortStale(ctx, p.Files); err != nil {
		return PushResult{}, err
	}
	res, err := c.PushFiles(ctx, p.Files, p.Dirs, o)
	res.Deleted = len(p.Delete)
	res.Skipped, res.SkippedBytes = len(p.Skip)+len(p.Touch), p.SkippedBytes()
	if err != nil {
		return res, err
	}
	for _, f := range p.Touch {
		if err := c.SetAttrs(ctx, f); err != nil {
			return res, fmt.Errorf("%s: %w", f.Remote, err)
		}
	}
	if err := c.pushLinks(ctx, p.Links, &res); err != nil {
		return res, err
	}
	for i := len(p.DirAttrs) - 1; i >= 0; i-- {
		if err := c.SetAttrs(ctx, p.DirAttrs[i]); err != nil {
			return res, fmt.Errorf("%s: %w", p.DirAttrs[i].Remote, err)
		}
	}
	return res, nil
}

// pushLinks creates the planned links, their folders first (a folder holding
// only links is not among the empty ones PushFiles makes), each with its
// mtime.
func (c *Client) pushLinks(ctx context.Context, links []PushLink, res *PushResult) error {
	made := map[string]bool{}
	for _, l := range links {
		if dir := path.Dir(l.Remote); !made[dir] {
			if _, err := c.Mkdir(ctx, dir, true); err != nil {
				return fmt.Errorf("%s: %w", dir, err)
			}
			made[dir] = true
		}
		if l.Replace {
			if err := c.Remove(ctx, l.Remote, false); err != nil && StatusOf(err) != http.StatusNotFound {
				return fmt.Errorf("%s: %w", l.Remote, err)
			}
		}
		if _, err := c.Symlink(ctx, l.Remote, l.Target); err != nil {
			return fmt.Errorf("%s: %w", l.Remote, err)
		}
		if _, err := c.SetAttr(ctx, l.Remote, &l.ModTime, nil); err != nil {
			return fmt.Errorf("%s: %w", l.Remote, err)
		}
		res.Links++
	}
	return nil
}

// PushFiles sends a planned list of files and creates the empty directories.
func (c *Client) PushFiles(ctx context.Context, files []PushFile, dirs []string, o PushOptions) (PushResult, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = 3
	}
	info, err := c.Info(ctx)
	if err != nil {
		return PushResult{}, err
	}
	if o.SmallFileLimit == 0 {
		o.SmallFileLimit = info.SmallFileLimit
	}
	emit := serialized(o.OnEvent)
	var res PushResult
	var errsMu sync.Mutex
	var errList []error
	// Wrong credentials stop the whole push: no other file can succeed.
	outer := ctx
	ctx, stopAll := context.WithCancel(ctx)
	defer stopAll()
	var fatal error
	record := func(f PushFile, r fileOutcome, err error) {
		errsMu.Lock()
		defer errsMu.Unlock()
		if err != nil && StatusOf(err) == http.StatusUnauthorized && fatal == nil {
			fatal = err
			stopAll()
		}
		res.Files++
		res.BytesSent += r.sent
		res.BytesSkip += r.skipped
		if r.instant {
			res.Instant++
		}
		if err != nil {
			res.Failed++
			errList = append(errList, fmt.Errorf("%s: %w", f.Local, err))
			emit(PushEvent{Type: "error", Local: f.Local, Remote: f.Remote, Size: f.Size, Error: err.Error()})
			return
		}
		emit(PushEvent{Type: "done", Local: f.Local, Remote: f.Remote, Size: f.Size, Small: r.small, Instant: r.instant, Result: &r.result})
	}

	for _, d := range dirs {
		if _, err := c.Mkdir(ctx, d, true); err != nil {
			return res, fmt.Errorf("mkdir %s: %w", d, err)
		}
	}
	var small, large []PushFile
	for _, f := range files {
		if o.SmallFileLimit > 0 && f.Size < o.SmallFileLimit {
			small = append(small, f)
		} else {
			large = append(large, f)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Concurrency)
	for _, f := range small {
		g.Go(func() error {
			emit(PushEvent{Type: "start", Local: f.Local, Remote: f.Remote, Size: f.Size, Small: true})
			r, err := c.pushSmall(gctx, f, info.ChunkSize, o, emit)
			record(f, r, err)
			return nil
		})
	}
	g.Wait()
	for _, f := range large {
		if ctx.Err() != nil {
			break
		}
		emit(PushEvent{Type: "start", Local: f.Local, Remote: f.Remote, Size: f.Size})
		r, err := c.pushChunked(ctx, f, o, emit)
		record(f, r, err)
	}
	if fatal != nil {
		return res, fatal
	}
	if outer.Err() != nil {
		return res, outer.Err()
	}
	switch len(errList) {
	case 0:
		return res, nil
	case 1:
		return res, errList[0]
	}
	return res, fmt.Errorf("%d of %d files failed; first: %w", len(errList), res.Files, errList[0])
}

// abortStale aborts the open uploads of files' remote paths whose declared
// size is not the file's any more (it changed since an interrupted push):
// init would open a second session beside them, and the quota would count
// both until the old one expired. A session of the same size is left to be
// resumed. A server without the session list (an older one) is no error.
func (c *Client) abortStale(ctx context.Context, files []PushFile) error {
	if len(files) == 0 {
		return nil
	}
	open, err := c.Uploads(ctx)
	if st := StatusOf(err); st == http.StatusNotFound || st == http.StatusMethodNotAllowed {
		return nil
	}
	if err != nil {
		return err
	}
	size := make(map[string]int64, len(files))
	for _, f := range files {
		size[f.Remote] = f.Size
	}
	for _, u := range open {
		if n, ok := size[u.Path]; ok && n != u.Size {
			if err := c.Abort(ctx, u.UploadID); err != nil && StatusOf(err) != http.StatusNotFound {
				return fmt.Errorf("abort the stale upload of %s: %w", u.Path, err)
			}
		}
	}
	return nil
}

type fileOutcome struct {
	small, instant bool
	sent, skipped  int64
	result         apitype.FileResult
}

// pushSmall sends a file below the small-file limit in one request: the
// one-request upload with the file's hash, so content the user already holds
// is committed without its bytes being sent (Expect: 100-continue), and other
// content is sent and checked against the hash. The request is retried like
// the pipeline's calls: backoff with jitter, transport errors and 5xx only (a
// full quota or a too large file is final).
func (c *Client) pushSmall(ctx context.Context, f PushFile, chunkSize int64, o PushOptions, emit func(PushEvent)) (fileOutcome, error) {
	out := fileOutcome{small: true}
	fh, err := os.Open(f.Local)
	if err != nil {
		return out, err
	}
	// Exactly the size planned, so a growing file cannot break the length;
	// in memory, so a retry sends the same bytes.
	data := make([]byte, f.Size)
	_, err = io.ReadFull(fh, data)
	fh.Close()
	if err != nil {
		return out, fmt.Errorf("read %s: %w", f.Local, err)
	}
	po := c.pipelineOptions(o, f, emit)
	// The file hash with its SHA-256 name: an MD5 match alone binds nothing.
	var fileSum chunker.FileSum
	if f.Size > 0 && chunkSize > 0 {
		n := chunker.ChunkCount(f.Size, chunkSize)
		hashes, shas := make([]string, 0, n), make([]string, 0, n)
		for off := int64(0); off < f.Size; off += chunkSize {
			s := chunker.HashChunk(data[off:min(off+chunkSize, f.Size)])
			hashes, shas = append(hashes, s.MD5), append(shas, s.SHA256)
		}
		fileSum = chunker.FileSum{Hash: chunker.FileHash(hashes), SHA256: chunker.FileSHA256(shas)}
	}
	var r apitype.FileResult
	var instant bool
	err = chunker.Retry(ctx, po, func(ctx context.Context) (err error) {
		r, instant, err = c.UploadHashed(ctx, f.Remote, data, fileSum, f.attrs())
		return err
	})
	if err != nil {
		return out, err
	}
	if r.Size == 0 {
		r.Size = f.Size
	}
	out.instant, out.result = instant, r
	if instant {
		out.skipped = f.Size
	} else {
		out.sent = f.Size
	}
	return out, nil
}

// uploadSmall is the one-request upload, retried under po.
func (c *Client) uploadSmall(ctx context.Context, remote string, data []byte, a Attrs, po chunker.Options) (apitype.FileResult, error) {
	var r apitype.FileResult
	err := chunker.Retry(ctx, po, func(ctx context.Context) (err error) {
		r, err = c.UploadWith(ctx, remote, bytes.NewReader(data), int64(len(data)), a)
		return err
	})
	if err == nil && r.Size == 0 {
		r.Size = int64(len(data))
	}
	return r, err
}

// pushChunked runs the pipeline for one file. When a resumed session's chunks
// turn out not to match the file (it changed since: merge answers 422), the
// session is abandoned and the file sent again from scratch, once.
func (c *Client) pushChunked(ctx context.Context, f PushFile, o PushOptions, emit func(PushEvent)) (fileOutcome, error) {
	fh, err := os.Open(f.Local)
	if err != nil {
		return fileOutcome{}, err
	}
	defer fh.Close()
	return c.pushChunkedFrom(ctx, fh, f, o, emit)
}

// PushContent stores size bytes of r at remote and returns the committed
// file: in one request when size is below o.SmallFileLimit (> 0; 0 does not
// ask the server here), else through the seed-000 pipeline. It is Push for
// content that is already open, e.g. the FUSE mount's staged files. Chunk
// sums known in advance go in o.Pipeline.Sums, computed with chunk size
// o.Pipeline.ChunkSize; they are ignored when the server cuts otherwise.
func (c *Client) PushContent(ctx context.Context, r io.ReaderAt, size int64, remote string, o PushOptions) (apitype.FileResult, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = 3
	}
	f := PushFile{Remote: remote, Size: size}
	emit := serialized(o.OnEvent)
	if o.SmallFileLimit > 0 && size < o.SmallFileLimit {
		// One request, without asking by hash first: the caller chose the
		// limit for that (the mount keeps it low). Retried all the same.
		data := make([]byte, size)
		if n, err := r.ReadAt(data, 0); err != nil && !(errors.Is(err, io.EOF) && n == len(data)) {
			return apitype.FileResult{}, fmt.Errorf("read content: %w", err)
		}
		return c.uploadSmall(ctx, remote, data, o.Attrs, c.pipelineOptions(o, f, emit))
	}
	out, err := c.pushChunkedFrom(ctx, r, f, o, emit)
	return out.result, err
}

func (c *Client) pushChunkedFrom(ctx context.Context, fh io.ReaderAt, f PushFile, o PushOptions, emit func(PushEvent)) (fileOutcome, error) {
	var out fileOutcome
	known := ""
	if len(o.Pipeline.Sums) > 0 {
		md5s := make([]string, len(o.Pipeline.Sums))
		for i, s := range o.Pipeline.Sums {
			md5s[i] = s.MD5
		}
		known = chunker.FileHash(md5s)
	}
	po := c.pipelineOptions(o, f, emit)
	var in apitype.Session
	err := chunker.Retry(ctx, po, func(ctx context.Context) (err error) {
		in, err = c.Init(ctx, f.Remote, f.Size, known)
		return err
	})
	if err != nil {
		return out, err
	}
	s := &Session{C: c, UploadID: in.UploadID, Path: f.Remote, Size: f.Size}
	if po.ChunkSize != in.ChunkSize || int64(len(po.Sums)) != chunker.ChunkCount(f.Size, in.ChunkSize) {
		po.Sums = nil // cut with another chunk size: hash again
	}
	po.ChunkSize = in.ChunkSize
	po.Concurrency = o.Concurrency
	if len(in.Uploaded) > 0 {
		held := slices.Clone(in.Uploaded)
		slices.Sort(held)
		po.Uploaded = func(i int) bool { _, ok := slices.BinarySearch(held, int64(i)); return ok }
	}
	// A resumed session whose chunks turn out not to be the file's (it
	// changed since: merge answers 422) is handled by the pipeline:
	// MergeFailed, then Session.Restart and a re-check of every chunk by hash.
	res, err := chunker.Upload(ctx, fh, f.Size, s, po)
	out.sent = res.Counters.BytesSent
	out.skipped = res.Counters.BytesSkipped
	if err != nil {
		return out, err
	}
	out.instant = res.Instant
	if res.Instant {
		out.skipped = f.Size - res.Counters.BytesSent
	}
	out.result = s.Result
	if out.result.Size == 0 {
		out.result.Size = f.Size
	}
	// merge takes no attributes: they follow in a second call. Should it
	// not arrive, a re-run sees another mtime and commits the content
	// again, instantly (the user holds it), then sets them.
	if !f.ModTime.IsZero() {
		if err := chunker.Retry(ctx, po, func(ctx context.Context) error { return c.SetAttrs(ctx, f) }); err != nil {
			return out, err
		}
	}
	return out, nil
}

// pipelineOptions is the chunker template of o for file f: the client's
// retry rule and events reported as f's.
func (c *Client) pipelineOptions(o PushOptions, f PushFile, emit func(PushEvent)) chunker.Options {
	po := o.Pipeline
	if po.Retryable == nil {
		po.Retryable = Retryable
	}
	po.OnEvent = func(e chunker.Event) {
		emit(PushEvent{Type: "pipeline", Local: f.Local, Remote: f.Remote, Size: f.Size, Event: &e})
	}
	return po
}

func decodeJSON(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }
