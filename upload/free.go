package upload

import (
	"context"
	"errors"
	"strings"

	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// maxFreeNames bounds the names InitFree tries.
const maxFreeNames = 1000

// InitFree starts a new session for a file named name in uid's folder dir
// that replaces nothing and shares nothing: its path is the first of name,
// "name (2)", … that no node holds and, past that, the first where it
// opens a session of its own: it never resumes (joins) a session someone
// else opened, even one with the same name and size. It is the session of an uploader
// who may see neither the folder nor the other uploads into it (a file
// drop): the only way back to it is its id, which the caller keeps. Merge
// it with MergeFree, which takes the next free name again should the path
// have been taken meanwhile. name must be one name (no "/"); it is checked
// as any path is (vpath.Clean).
func (s *Service) InitFree(ctx context.Context, uid int64, dir, name string, size int64) (Info, error) {
	const op = "upload.InitFree"
	if c, err := vpath.Clean("/" + name); err != nil || c != "/"+name || name == "" || strings.Contains(name, "/") {
		if err == nil {
			err = errors.New("not one name")
		}
		return Info{}, errs.E(op, errs.Invalid, name, err)
	}
	d, err := vpath.Clean(dir)
	if err != nil {
		return Info{}, errs.E(op, errs.Invalid, dir, err)
	}
	if size < 0 {
		return Info{}, errs.Errorf(op, errs.Invalid, "negative size")
	}
	if err := s.d.CheckFileSize(op, vpath.Join(d, name), size); err != nil {
		return Info{}, err
	}
	if len(d)+1+len(name) > vpath.MaxPathLen-8 {
		return Info{}, errs.E(op, errs.Invalid, name, errors.New("path too long"))
	}
	for i := 1; i <= maxFreeNames; i++ {
		p := vpath.Join(d, meta.NumberedName(name, i))
		_, err := s.d.Stat(ctx, uid, p)
		if err == nil {
			continue // taken, by a file or a folder alike
		}
		if !errs.Is(err, errs.NotFound) {
			return Info{}, err
		}
		if i == 1 {
			// The folder itself must be one (checkTarget's other half).
			if _, err := s.checkTarget(ctx, op, uid, p); err != nil {
				return Info{}, err
			}
		}
		if err := s.d.CheckWrite(ctx, uid, p); err != nil {
			return Info{}, err
		}
		now := s.now()
		id := newID()
		used, err := s.d.OpenSession(ctx, meta.Session{ID: id, UserID: uid, Path: p, Size: size, ChunkSize: s.d.ChunkSize()},
			now.Add(-s.ttl), now)
		if err != nil {
			return Info{}, err
		}
		if used != id {
			continue // another upload's session holds the path (and size): never join it
		}
		return s.Get(ctx, uid, id)
	}
	return Info{}, errs.E(op, errs.Exists, name, errors.New("no free name left for the file"))
}
