package client

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"netdisk/chunker"
	"netdisk/errs"
	"netdisk/internal/atomicfile"
)

// Downloads go over WebDAV GET (docs/API.md): Range resumes a partial file,
// If-Range makes sure the part and the rest belong to the same version, and
// the ETag (the file hash) verifies what arrived.

// PullOptions tune Pull.
type PullOptions struct {
	// OnProgress is called as bytes arrive: file is the local path, done
	// counts bytes of this file already local (including a resumed part).
	OnProgress func(file string, done, total int64)
	// Sync chooses what Pull skips and deletes.
	Sync SyncOptions
}

// PullResult sums up a Pull.
type PullResult struct {
	Files   int
	Bytes   int64 // bytes received over the network
	Resumed int64 // bytes reused from .part files
	// Unchanged files (PullPlan.Skip and Touch) and their bytes, and the
	// local paths a mirror deleted.
	Skipped      int
	SkippedBytes int64
	Deleted      int
	Links        int // symbolic links created
}

// PartSuffix names an interrupted download beside its target; PartSuffix+".etag"
// holds the version it belongs to.
const PartSuffix = ".part"

// Pull downloads remote (a file or a whole directory) to local (default
// "."), by the trailing-slash rule (PlanPull): files unchanged by o.Sync's
// measure are skipped; every file and directory gets the server's mtime and
// mode.
func (c *Client) Pull(ctx context.Context, remote, local string, o PullOptions) (PullResult, error) {
	p, err := c.PlanPull(ctx, remote, local, o.Sync)
	if err != nil {
		return PullResult{}, err
	}
	return c.PullPlanned(ctx, p, o)
}

// PullPlanned carries out p: deletes, directories, files (then their
// attributes), and last the directories' attributes, deepest first, once
// nothing more is written into them.
func (c *Client) PullPlanned(ctx context.Context, p PullPlan, o PullOptions) (PullResult, error) {
	res := PullResult{Skipped: len(p.Skip) + len(p.Touch), SkippedBytes: p.SkippedBytes()}
	info, err := c.Info(ctx)
	if err != nil {
		return res, err
	}
	// Deletes first: they make room, and way for a file where a
	// directory was (or the other way round).
	for _, l := range p.Delete {
		if err := os.RemoveAll(l); err != nil {
			return res, err
		}
		res.Deleted++
	}
	for _, d := range p.Dirs {
		if err := os.MkdirAll(d.Local, 0o755); err != nil {
			return res, err
		}
	}
	for _, f := range p.Files {
		if err := c.pullFile(ctx, f.Remote, f.Local, info.ChunkSize, o, &res); err != nil {
			return res, err
		}
		if err := applyAttrs(f.Local, f.Node); err != nil {
			return res, err
		}
	}
	for _, f := range p.Touch {
		if err := applyAttrs(f.Local, f.Node); err != nil {
			return res, err
		}
	}
	for _, l := range p.Links {
		// The link itself replaces a local file or link (never a folder:
		// that goes only with --delete); its target is created as given,
		// as rsync -l does, never followed here.
		if st, err := os.Lstat(l.Local); err == nil && !st.IsDir() {
			if err := os.Remove(l.Local); err != nil {
				return res, err
			}
		}
		if err := os.Symlink(l.Node.Target, l.Local); err != nil {
			return res, err
		}
		res.Links++
	}
	for i := len(p.Dirs) - 1; i >= 0; i-- {
		if err := applyAttrs(p.Dirs[i].Local, p.Dirs[i].Node); err != nil {
			return res, err
		}
	}
	return res, nil
}

// ErrChanged is ReadAt's answer when the file's current version is not the
// one asked for.
var ErrChanged = errors.New("file changed on the server")

// ReadAt fills dest with the bytes at off of the version of file p whose
// file hash is fileHash: a WebDAV GET with Range and If-Match, so the bytes
// never mix two versions. Another current version is ErrChanged.
func (c *Client) ReadAt(ctx context.Context, p, fileHash string, off int64, dest []byte) error {
	if len(dest) == 0 {
		return nil
	}
	req, err := c.NewRequest(ctx, http.MethodGet, DavPath(p), nil, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+int64(len(dest))-1))
	req.Header.Set("If-Match", `"`+fileHash+`"`)
	resp, err := c.Do(req)
	if err != nil {
		if KindOf(err) == errs.Precondition {
			return ErrChanged
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

// DavPath returns the URL path of p under /dav/.
func DavPath(p string) string {
	return (&url.URL{Path: "/dav" + path.Clean("/"+p)}).EscapedPath()
}

func (c *Client) pullFile(ctx context.Context, remote, local string, chunkSize int64, o PullOptions, res *PullResult) error {
	part := local + PartSuffix
	etagFile := part + ".etag"
	var offset int64
	prevTag, _ := os.ReadFile(etagFile)
	if st, err := os.Stat(part); err == nil && len(prevTag) > 0 {
		offset = st.Size()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Server+DavPath(remote), nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(c.User, c.Password)
	if offset > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
		req.Header.Set("If-Range", string(prevTag))
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("server %s unreachable: %w", c.Server, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
	case http.StatusOK:
		offset = 0 // no part, or the file changed since: start over
	case http.StatusRequestedRangeNotSatisfiable:
		// The part is as long as the file (or longer): start over cleanly.
		os.Remove(part)
		os.Remove(etagFile)
		resp.Body.Close()
		return c.pullFile(ctx, remote, local, chunkSize, o, res)
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &Error{Status: resp.StatusCode, Message: strings.TrimSpace(firstNonEmpty(string(b), http.StatusText(resp.StatusCode))), Body: b}
	}
	etag := resp.Header.Get("ETag")
	total := offset + resp.ContentLength
	if resp.StatusCode == http.StatusPartialContent {
		if _, size, ok := parseContentRange(resp.Header.Get("Content-Range")); ok {
			total = size
		}
	}

	if dir := filepath.Dir(local); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	flags := os.O_CREATE | os.O_RDWR
	if offset == 0 {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := os.WriteFile(etagFile, []byte(etag), 0o644); err != nil {
		return err
	}
	// Hash what is already local, then what arrives, as chunk MD5s.
	h := newStreamHasher(chunkSize)
	if offset > 0 {
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, offset)); err != nil {
			return fmt.Errorf("read %s: %w", part, err)
		}
		res.Resumed += offset
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return err
	}
	done := offset
	w := io.MultiWriter(f, h, progressWriter(func(n int) {
		done += int64(n)
		res.Bytes += int64(n)
		if o.OnProgress != nil {
			o.OnProgress(local, done, total)
		}
	}))
	if _, err := io.Copy(w, resp.Body); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("download %s: %w (run pull again to resume)", remote, err)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	want := strings.Trim(strings.TrimPrefix(etag, "W/"), `"`)
	if got := h.Sum(); want != "" && got != want {
		os.Remove(part)
		os.Remove(etagFile)
		return fmt.Errorf("download %s: content hash %s does not match the server's %s (removed; run pull again)", remote, got, want)
	}
	if err := atomicfile.Rename(part, local); err != nil {
		return err
	}
	os.Remove(etagFile)
	res.Files++
	return nil
}

func firstNonEmpty(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}

// parseContentRange parses "bytes START-END/SIZE".
func parseContentRange(s string) (start, size int64, ok bool) {
	s, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, sz, found := strings.Cut(s, "/")
	if !found {
		return 0, 0, false
	}
	a, _, found := strings.Cut(rng, "-")
	start, err1 := strconv.ParseInt(a, 10, 64)
	size, err2 := strconv.ParseInt(sz, 10, 64)
	return start, size, found && err1 == nil && err2 == nil
}

type progressWriter func(int)

func (p progressWriter) Write(b []byte) (int, error) { p(len(b)); return len(b), nil }

// streamHasher computes the file hash (chunker's content identity) of a byte
// stream, cutting it at chunkSize.
type streamHasher struct {
	size  int64
	n     int64 // bytes in the current chunk
	chunk hash.Hash
	file  *chunker.FileHasher
}

func newStreamHasher(chunkSize int64) *streamHasher {
	return &streamHasher{size: chunkSize, chunk: md5.New(), file: chunker.NewFileHasher()}
}

func (s *streamHasher) Write(b []byte) (int, error) {
	total := len(b)
	for len(b) > 0 {
		k := min(int64(len(b)), s.size-s.n)
		s.chunk.Write(b[:k])
		s.n += k
		b = b[k:]
		if s.n == s.size {
			s.flush()
		}
	}
	return total, nil
}

func (s *streamHasher) flush() {
	s.file.Add(hex.EncodeToString(s.chunk.Sum(nil)))
	s.chunk.Reset()
	s.n = 0
}

// Sum returns the file hash of everything written.
func (s *streamHasher) Sum() string {
	if s.n > 0 {
		s.flush()
	}
	return s.file.Sum()
}
