package upload

import (
	"context"
	"fmt"
	"time"

	"netdisk/chunker"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// Init starts a session for path, or resumes the open one with the same path
// and size (and file hash, when given).
func (s *Service) Init(ctx context.Context, uid int64, path string, size int64, fileHash string) (Info, error) {
	const op = "upload.Init"
	p, err := vpath.Clean(path)
	if err != nil {
		return Info{}, errs.E(op, errs.Invalid, path, err)
	}
	if size < 0 {
		return Info{}, errs.Errorf(op, errs.Invalid, "negative size")
	}
	if err := s.d.CheckFileSize(op, p, size); err != nil {
		return Info{}, err
	}
	if fileHash != "" && !chunker.ValidHash(fileHash) {
		return Info{}, errs.Errorf(op, errs.Invalid, "fileHash must be 32 lowercase hex digits")
	}
	replaces, err := s.checkTarget(ctx, op, uid, p)
	if err != nil {
		return Info{}, err
	}
	// A WebDAV lock on the path refuses the upload before any byte is
	// sent; commit checks again.
	if err := s.d.CheckWrite(ctx, uid, p); err != nil {
		return Info{}, err
	}
	// Resume the open session with the same path and size, if any.
	id, err := s.db.ResumeSession(ctx, uid, p, size, fileHash, s.now().Add(-s.ttl), s.now())
	if err != nil {
		return Info{}, err
	}
	if id == "" {
		// A new session, unless a concurrent init created a matching one
		// meanwhile: then that one is used.
		now := s.now()
		id, err = s.d.OpenSession(ctx, meta.Session{ID: newID(), UserID: uid, Path: p, Size: size, ChunkSize: s.d.ChunkSize(),
			FileHash: fileHash, Replaces: replaces}, now.Add(-s.ttl), now)
		if err != nil {
			return Info{}, err
		}
	}
	return s.Get(ctx, uid, id)
}

// checkTarget refuses a path that is (or lies under) a file where a directory
// is needed, and returns the size of the file the upload would replace.
// Missing parents are fine: merge creates them.
func (s *Service) checkTarget(ctx context.Context, op string, uid int64, p string) (int64, error) {
	if p == "/" {
		return 0, errs.E(op, errs.IsDir, p, nil)
	}
	var replaces int64
	n, err := s.d.Stat(ctx, uid, p)
	switch {
	case err == nil && n.IsDir:
		return 0, errs.E(op, errs.IsDir, p, nil)
	case err == nil:
		replaces = n.Size
	case !errs.Is(err, errs.NotFound):
		return 0, err
	}
	for dir := vpath.Parent(p); dir != ""; dir = vpath.Parent(dir) {
		n, err := s.d.Stat(ctx, uid, dir)
		if errs.Is(err, errs.NotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if !n.IsDir {
			return 0, errs.E(op, errs.NotDir, p, fmt.Errorf("%s is a file", dir))
		}
		break
	}
	return replaces, nil
}

// Get returns a session as init answers it.
func (s *Service) Get(ctx context.Context, uid int64, id string) (Info, error) {
	const op = "upload.Session"
	ss, err := s.load(ctx, op, uid, id)
	if err != nil {
		return Info{}, err
	}
	held, err := s.db.SessionChunks(ctx, ss.ID)
	if err != nil {
		return Info{}, err
	}
	info := Info{UploadID: ss.ID, ChunkSize: ss.ChunkSize, TotalChunks: ss.total(), Uploaded: make([]int64, 0, len(held)), Path: ss.Path}
	for _, c := range held {
		info.Uploaded = append(info.Uploaded, c.Index)
	}
	return info, nil
}

// Open is one of a user's open sessions as List describes it.
type Open struct {
	UploadID string
	Path     string
	Size     int64 // declared: what the session reserves of the quota
	Received int64 // bytes of the chunks held
	Touched  time.Time
	Expires  time.Time // when it expires unless touched again
}

// List returns uid's open sessions, the most recently used first; one
// past its TTL is gone (as load says) even before the janitor drops it.
func (s *Service) List(ctx context.Context, uid int64) ([]Open, error) {
	all, err := s.db.UserSessions(ctx, uid)
	if err != nil {
		return nil, err
	}
	out := make([]Open, 0, len(all))
	for _, ss := range all {
		if s.expired(ss.Touched) {
			continue
		}
		out = append(out, Open{UploadID: ss.ID, Path: ss.Path, Size: ss.Size, Received: ss.Received,
			Touched: ss.Touched, Expires: ss.Touched.Add(s.ttl)})
	}
	return out, nil
}

// Abort abandons a session: its held bytes are released and its chunks become
// garbage unless something else references them.
func (s *Service) Abort(ctx context.Context, uid int64, id string) error {
	const op = "upload.Abort"
	mu := s.stripe(id)
	mu.Lock()
	defer mu.Unlock()
	if _, err := s.load(ctx, op, uid, id); err != nil {
		return err
	}
	_, err := s.d.DropSession(ctx, id, s.now())
	return err
}
