package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"netdisk/apitype"
	"netdisk/chunker"
)

// The calls of the upload protocol (shared/API.md), one method each, and
// Session, the chunker.Remote that binds them to one upload for the pipeline.

// Init starts or resumes the upload session of path (fileHash may be "").
func (c *Client) Init(ctx context.Context, path string, size int64, fileHash string) (apitype.Session, error) {
	var r apitype.Session
	err := c.JSON(ctx, http.MethodPost, "/api/v1/file/init", nil, apitype.InitRequest{Path: &path, Size: &size, FileHash: fileHash}, &r)
	return r, err
}

// PatchChunk asks whether the server holds chunk index with hash (MD5) and
// sha (SHA-256; "" asks by MD5 alone, which the server answers "send the
// bytes").
func (c *Client) PatchChunk(ctx context.Context, uploadID string, index int, hash, sha string) (apitype.PatchHashResult, error) {
	i := int64(index)
	var r apitype.PatchHashResult
	err := c.JSON(ctx, http.MethodPost, "/api/v1/file/patchHash", nil,
		apitype.PatchHashRequest{UploadID: uploadID, Index: &i, Hash: hash, SHA256: sha}, &r)
	return r, err
}

// PatchFile asks whether the server holds a file with fileHash and the
// SHA-256 name fileSHA (chunker.FileSHA256).
func (c *Client) PatchFile(ctx context.Context, uploadID, fileHash, fileSHA string) (apitype.PatchHashResult, error) {
	var r apitype.PatchHashResult
	err := c.JSON(ctx, http.MethodPost, "/api/v1/file/patchHash", nil,
		apitype.PatchHashRequest{UploadID: uploadID, FileHash: fileHash, FileSHA256: fileSHA}, &r)
	return r, err
}

// Prove answers a challenge over content (a chunk's bytes when index is not
// nil, else the whole file): the proof is computed here from content.
func (c *Client) Prove(ctx context.Context, uploadID string, index *int, ch apitype.Challenge, content io.ReaderAt) (apitype.ProveResult, error) {
	proof, err := chunker.Proof(ch.Nonce, content, ch.Ranges)
	if err != nil {
		return apitype.ProveResult{}, err
	}
	in := apitype.ProveRequest{UploadID: uploadID, Nonce: ch.Nonce, Proof: proof}
	if index != nil {
		i := int64(*index)
		in.Index = &i
	}
	var r apitype.ProveResult
	err = c.JSON(ctx, http.MethodPost, "/api/v1/file/prove", nil, in, &r)
	return r, err
}

// UploadChunk sends the bytes of chunk index.
func (c *Client) UploadChunk(ctx context.Context, uploadID string, index int, hash string, data []byte) error {
	q := url.Values{"uploadId": {uploadID}, "index": {strconv.Itoa(index)}, "hash": {hash}}
	req, err := c.NewRequest(ctx, http.MethodPut, "/api/v1/file/uploadChunk", q, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// Merge commits the session's chunks as its file; with fileSHA (may be "")
// the server also checks the chunks' SHA-256s against it.
func (c *Client) Merge(ctx context.Context, uploadID, fileHash, fileSHA string) (apitype.FileResult, error) {
	var r apitype.FileResult
	err := c.JSON(ctx, http.MethodPost, "/api/v1/file/merge", nil, apitype.MergeRequest{UploadID: uploadID, FileHash: fileHash, FileSHA256: fileSHA}, &r)
	return r, err
}

// Session returns the state of an open session (same body as Init).
func (c *Client) Session(ctx context.Context, uploadID string) (apitype.Session, error) {
	var r apitype.Session
	err := c.JSON(ctx, http.MethodGet, "/api/v1/file/session", url.Values{"uploadId": {uploadID}}, nil, &r)
	return r, err
}

// Uploads lists the user's open upload sessions, most recently used first.
func (c *Client) Uploads(ctx context.Context) ([]apitype.OpenUpload, error) {
	var r apitype.OpenUploads
	err := c.JSON(ctx, http.MethodGet, "/api/v1/file/sessions", nil, nil, &r)
	return r.Sessions, err
}

// Abort abandons a session and releases its quota.
func (c *Client) Abort(ctx context.Context, uploadID string) error {
	return c.JSON(ctx, http.MethodDelete, "/api/v1/file/session", url.Values{"uploadId": {uploadID}}, nil, nil)
}

// Upload sends a small file (under the server's smallFileLimit) in one request.
func (c *Client) Upload(ctx context.Context, path string, body io.Reader, size int64) (apitype.FileResult, error) {
	return c.UploadWith(ctx, path, body, size, Attrs{})
}

// Attrs are attributes the one-request upload stores with the content.
type Attrs struct {
	ModTime time.Time // zero: the server's now
	Mode    *uint32   // permission bits (≤ 0o7777); nil keeps the old version's (or 0644)
}

// query is the one-request upload's query for path with the attributes a.
func (a Attrs) query(path string) url.Values {
	q := url.Values{"path": {path}}
	if !a.ModTime.IsZero() {
		q.Set("mtime", a.ModTime.UTC().Format(time.RFC3339Nano))
	}
	if a.Mode != nil {
		q.Set("mode", strconv.FormatUint(uint64(*a.Mode), 10))
	}
	return q
}

// UploadWith is Upload storing the attributes a in the same commit.
func (c *Client) UploadWith(ctx context.Context, path string, body io.Reader, size int64, a Attrs) (apitype.FileResult, error) {
	q := a.query(path)
	req, err := c.NewRequest(ctx, http.MethodPut, "/api/v1/file/upload", q, body)
	if err != nil {
		return apitype.FileResult{}, err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.Do(req)
	if err != nil {
		return apitype.FileResult{}, err
	}
	defer resp.Body.Close()
	var r apitype.FileResult
	if err := decodeJSON(resp.Body, &r); err != nil {
		return r, fmt.Errorf("decode upload answer: %w", err)
	}
	return r, nil
}

// UploadHashed is the one-request upload of data with its file hash and
// SHA-256 name (the extension in docs/API.md): when this user already holds
// that content, the server commits at once and answers before the body is
// sent (Expect: 100-continue; instant is true); otherwise it reads the body
// and refuses it (422) unless it hashes to f.Hash.
func (c *Client) UploadHashed(ctx context.Context, path string, data []byte, f chunker.FileSum, a Attrs) (r apitype.FileResult, instant bool, err error) {
	fileHash := f.Hash
	q := a.query(path)
	if fileHash != "" {
		q.Set("fileHash", fileHash)
		if f.SHA256 != "" {
			q.Set("fileSha256", f.SHA256)
		}
	}
	req, err := c.NewRequest(ctx, http.MethodPut, "/api/v1/file/upload", q, bytes.NewReader(data))
	if err != nil {
		return r, false, err
	}
	req.ContentLength = int64(len(data))
	req.Header.Set("Content-Type", "application/octet-stream")
	if fileHash != "" && len(data) > 0 {
		// The transport waits (ExpectContinueTimeout) for the server's
		// 100 Continue or its final answer before sending the body.
		req.Header.Set("Expect", "100-continue")
	}
	resp, err := c.Do(req)
	if err != nil {
		return r, false, err
	}
	defer resp.Body.Close()
	if err := decodeJSON(resp.Body, &r); err != nil {
		return r, false, fmt.Errorf("decode upload answer: %w", err)
	}
	return r, r.Instant, nil
}

// Retryable says whether a failed call is worth repeating: transport errors
// and 5xx (but not 507) are; other answers will not change by asking again.
func Retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		switch {
		case e.Status == http.StatusInsufficientStorage:
			return false
		case e.Status >= 500, e.Status == http.StatusRequestTimeout, e.Status == http.StatusTooManyRequests:
			return true
		}
		return false
	}
	return true
}

// Session binds the protocol's calls to one upload for chunker.Upload.
type Session struct {
	C        *Client
	UploadID string
	// Path and Size are the upload's, for Restart (which needs them).
	Path string
	Size int64
	// Result is the committed file, set by a file check that completed the
	// upload or by Merge.
	Result apitype.FileResult
}

var (
	_ chunker.Remote    = (*Session)(nil)
	_ chunker.Restarter = (*Session)(nil)
)

func (s *Session) PatchChunk(ctx context.Context, c chunker.Chunk) (chunker.Check, error) {
	r, err := s.C.PatchChunk(ctx, s.UploadID, c.Index, c.Hash, c.SHA256)
	return chunker.Check{Exists: r.Exists, Challenge: r.Challenge}, err
}

func (s *Session) ProveChunk(ctx context.Context, c chunker.Chunk, ch chunker.Challenge, data []byte) (bool, error) {
	r, err := s.C.Prove(ctx, s.UploadID, &c.Index, ch, bytes.NewReader(data))
	return r.OK, err
}

func (s *Session) UploadChunk(ctx context.Context, c chunker.Chunk, data []byte) error {
	return s.C.UploadChunk(ctx, s.UploadID, c.Index, c.Hash, data)
}

func (s *Session) PatchFile(ctx context.Context, f chunker.FileSum) (chunker.Check, error) {
	r, err := s.C.PatchFile(ctx, s.UploadID, f.Hash, f.SHA256)
	if err != nil {
		return chunker.Check{}, err
	}
	if r.Exists && r.Challenge == nil {
		s.Result = apitype.FileResult{Path: r.Path, FileHash: f.Hash}
	}
	return chunker.Check{Exists: r.Exists, Challenge: r.Challenge}, nil
}

func (s *Session) ProveFile(ctx context.Context, f chunker.FileSum, ch chunker.Challenge, file io.ReaderAt) (bool, error) {
	r, err := s.C.Prove(ctx, s.UploadID, nil, ch, file)
	if err != nil {
		return false, err
	}
	if r.OK {
		s.Result = apitype.FileResult{Path: r.Path, FileHash: f.Hash}
	}
	return r.OK, nil
}

// Merge commits the session. A 422 answer (the chunks held do not make the
// file: other MD5s, or the same MD5s but other bytes) wraps
// chunker.ErrContentChanged.
func (s *Session) Merge(ctx context.Context, f chunker.FileSum) error {
	r, err := s.C.Merge(ctx, s.UploadID, f.Hash, f.SHA256)
	if StatusOf(err) == http.StatusUnprocessableEntity {
		return fmt.Errorf("%w: %w", chunker.ErrContentChanged, err)
	}
	if err != nil {
		return err
	}
	s.Result = r
	return nil
}

// Restart abandons the session, whose chunks are not the file's, and opens a
// fresh one for the same path and size that promises fileHash
// (chunker.Restarter). The server cannot take other bytes for a chunk a
// session already holds, hence a new session rather than resending into the
// old one. The chunks of the old session stay stored until the server's next
// garbage collection, so the pipeline's re-check by hash finds the unchanged
// ones (with a proof of ownership) and sends only the others.
func (s *Session) Restart(ctx context.Context, fileHash string) error {
	if s.Path == "" {
		return errors.New("restart: the session's path is not known")
	}
	if err := s.C.Abort(ctx, s.UploadID); err != nil && StatusOf(err) != http.StatusNotFound {
		return fmt.Errorf("abandon the stale session: %w", err)
	}
	in, err := s.C.Init(ctx, s.Path, s.Size, fileHash)
	if err != nil {
		return err
	}
	s.UploadID = in.UploadID
	return nil
}

// SendAhead stores one full chunk (its identity sum) of a file whose final
// size is not known yet (a file still being written), in a one-chunk session
// of its own that is never merged. A later upload of the file then finds the
// chunk held by this user and sends no bytes for it (patchHash, naming it by
// SHA-256, answers exists). Abort the returned session once that upload is
// committed or abandoned; the server's session expiry covers a client that
// never does.
func (c *Client) SendAhead(ctx context.Context, path string, data []byte, sum chunker.Sum) (uploadID string, err error) {
	// The file hash keeps sessions of different chunks for the same path
	// apart (chunks sharing an MD5 share a session: patchHash then tells
	// them apart by SHA-256, below).
	in, err := c.Init(ctx, path, int64(len(data)), chunker.FileHash([]string{sum.MD5}))
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			c.Abort(context.WithoutCancel(ctx), in.UploadID)
		}
	}()
	s := &Session{C: c, UploadID: in.UploadID}
	ch := chunker.Chunk{Index: 0, Size: int64(len(data)), Hash: sum.MD5, SHA256: sum.SHA256}
	chk, err := s.PatchChunk(ctx, ch)
	if StatusOf(err) == http.StatusConflict {
		// The session holds other bytes with this MD5: this chunk goes
		// in a session of its own.
		c.Abort(ctx, in.UploadID)
		if in, err = c.Init(ctx, path, int64(len(data)), chunker.FileHash([]string{sum.MD5})); err != nil {
			return "", err
		}
		s.UploadID = in.UploadID
		chk, err = s.PatchChunk(ctx, ch)
	}
	if err != nil {
		return "", err
	}
	if chk.Exists && chk.Challenge == nil {
		return in.UploadID, nil
	}
	if chk.Exists {
		if ok, err := s.ProveChunk(ctx, ch, *chk.Challenge, data); err == nil && ok {
			return in.UploadID, nil
		}
	}
	return in.UploadID, s.UploadChunk(ctx, ch, data)
}
