// Package preview serves thumbnails of the users' images: it finds the
// user's file through the drive, and makes each content's thumbnail once
// per size (package thumb makes it), kept on the node's disk.
//
// A thumbnail is keyed by the content (drive.Reader.ContentKey, a SHA-256
// over the chunks' SHA-256s) and the size bucket, never by path or user: a
// copy, a move or a second user with the same bytes costs nothing, and a
// changed file is new content with a new thumbnail. The key is collision
// safe, unlike the MD5 file hash, so one user is never handed a thumbnail
// of another's bytes. Concurrent requests for the same missing thumbnail
// make it once (singleflight); damaged and oversized images are judged once
// and the refusal kept like a thumbnail.
package preview

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"netdisk/drive"
	"netdisk/errs"
	"netdisk/internal/zero"
	"netdisk/meta"
	"netdisk/thumb"
)

// Config sets up a Service.
type Config struct {
	Drive *drive.Drive
	// Dir is the node's thumbnail folder (netdisk serve: DATA/thumbs).
	Dir string
	// MaxBytes bounds the folder (default 512 MiB); the least recently used
	// thumbnails go first.
	MaxBytes int64
	Limits   thumb.Limits
	// MakeTimeout bounds one thumbnail's making (default 1 min). The
	// making is not tied to the request that started it: other requests
	// may be waiting for the same thumbnail, and it is kept for the next.
	MakeTimeout time.Duration
	Now         func() time.Time
	Log         *slog.Logger
}

// Defaults of Config.
const (
	DefaultMaxBytes    = 512 << 20
	DefaultMakeTimeout = time.Minute
)

// Counters count thumbnails since start, for /metrics.
type Counters struct {
	Made    atomic.Int64 // made and kept
	Cached  atomic.Int64 // served from the folder
	Refused atomic.Int64 // not an image, damaged or over the limits
}

// Service makes and keeps thumbnails.
type Service struct {
	d       *drive.Drive
	maker   *thumb.Maker
	cache   *cache
	timeout time.Duration
	log     *slog.Logger
	group   singleflight.Group
	Counters

	// testHookMake, when set, runs in the one request that makes a
	// thumbnail, before it reads the file; waiting counts the requests
	// waiting for one (tests hold the maker until all have joined).
	testHookMake func()
	waiting      atomic.Int64
}

// Open opens the thumbnail folder (made when missing) and returns the
// service.
func Open(c Config) (*Service, error) {
	zero.OrDefault(&c.MaxBytes, DefaultMaxBytes)
	zero.OrDefault(&c.MakeTimeout, DefaultMakeTimeout)
	log := zero.Logger(c.Log)
	ca, err := openCache(c.Dir, c.MaxBytes, zero.Clock(c.Now), log)
	if err != nil {
		return nil, errs.E("preview.Open", errs.Other, "", err)
	}
	return &Service{d: c.Drive, maker: thumb.New(c.Limits), cache: ca, timeout: c.MakeTimeout, log: log}, nil
}

// Close closes the thumbnail folder.
func (s *Service) Close() error { return s.cache.close() }

// Limits are the limits thumbnails are made under (defaults filled in).
func (s *Service) Limits() thumb.Limits { return s.maker.Limits() }

// Preview is a thumbnail to send.
type Preview struct {
	Data        []byte
	ContentType string
	ETag        string // quoted; the version's and the size's (ETag)
}

// ETag is the entity tag of file n's thumbnail at size (a bucket): the
// content's hash and the size, so a changed file or another size never
// matches an old tag, and a conditional request is answered 304 without
// reading anything but the file's record.
func ETag(n meta.Node, size int) string {
	return `"` + n.FileHash + "-" + strconv.Itoa(thumb.Bucket(size)) + `"`
}

// Stat returns user uid's file at p, refusing a folder (Invalid: 400).
func (s *Service) Stat(ctx context.Context, uid int64, p string) (meta.Node, error) {
	n, err := s.d.Stat(ctx, uid, p)
	return file(n, err)
}

// StatID returns user uid's file with id (another user's id is NotFound,
// as an unknown one), refusing a folder.
func (s *Service) StatID(ctx context.Context, uid, id int64) (meta.Node, error) {
	n, err := s.d.NodeByID(ctx, uid, id)
	return file(n, err)
}

func file(n meta.Node, err error) (meta.Node, error) {
	if err != nil {
		return meta.Node{}, err
	}
	if n.IsDir {
		return meta.Node{}, errs.Errorf("preview", errs.Invalid, "%s is a folder: only files have thumbnails", n.Path)
	}
	return n, nil
}

// Thumbnail returns the thumbnail of user uid's file n (from Stat or
// StatID) at size, snapped to a bucket (thumb.Bucket), made when no node's
// request made it before. Errors: errs.Unsupported (415) for what gets no
// thumbnail, with why; NotFound when the file went meanwhile; Canceled when
// ctx ends first (the making goes on for the next request).
func (s *Service) Thumbnail(ctx context.Context, uid int64, n meta.Node, size int) (Preview, error) {
	size = thumb.Bucket(size)
	for attempt := 0; ; attempt++ {
		p, err := s.thumbnail(ctx, uid, n, size)
		if !errs.Is(err, errs.Conflict) || attempt == 2 {
			return p, err
		}
		// The file changed between its record and its opening: take the
		// new version.
		if n, err = s.Stat(ctx, uid, n.Path); err != nil {
			return Preview{}, err
		}
	}
}

func (s *Service) thumbnail(ctx context.Context, uid int64, n meta.Node, size int) (Preview, error) {
	const op = "preview.Thumbnail"
	ck, err := s.d.ContentKey(ctx, n)
	if err != nil {
		return Preview{}, err
	}
	key := ck + "-" + strconv.Itoa(size)
	etag := ETag(n, size)
	if p, err, ok := s.cached(key, ck, etag); ok {
		if err != nil {
			s.Refused.Add(1)
		} else {
			s.Cached.Add(1)
		}
		return p, err
	}
	ch := s.group.DoChan(key, func() (any, error) {
		// Another request may have finished it between our look and now.
		if p, err, ok := s.cached(key, ck, etag); ok {
			return p, err
		}
		if s.testHookMake != nil {
			s.testHookMake()
		}
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
		defer cancel()
		r, err := s.d.Open(mctx, uid, n.Path)
		if err != nil {
			return Preview{}, err
		}
		defer r.Close()
		if r.ContentKey() != ck {
			return Preview{}, errs.Errorf(op, errs.Conflict, "%s changed while its thumbnail was asked", n.Path)
		}
		t, err := s.maker.Make(mctx, r, r.Node().Size, size)
		switch {
		case errs.Is(err, errs.Unsupported):
			s.Refused.Add(1)
			s.cache.put(s.refusedKey(ck), refusedType, []byte(errs.Message(err)))
			return Preview{}, err
		case err != nil:
			return Preview{}, err
		}
		s.Made.Add(1)
		s.cache.put(key, t.ContentType, t.Data)
		return Preview{Data: t.Data, ContentType: t.ContentType}, nil
	})
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	select {
	case <-ctx.Done():
		return Preview{}, errs.E(op, errs.Canceled, n.Path, ctx.Err())
	case res := <-ch:
		if res.Err != nil {
			return Preview{}, res.Err
		}
		p := res.Val.(Preview)
		p.ETag = etag
		return p, nil
	}
}

// refusedKey names the kept refusal of content ck under this node's
// limits: an image refused as too large is judged again once they are
// raised.
func (s *Service) refusedKey(ck string) string {
	l := s.maker.Limits()
	return ck + "-refused-" + strconv.FormatInt(l.MaxPixels, 10) + "-" + strconv.FormatInt(l.MaxInput, 10)
}

// cached looks for a kept thumbnail of key, or a kept refusal of the
// content ck (at any size: a refusal is the image's, not the size's).
func (s *Service) cached(key, ck, etag string) (Preview, error, bool) {
	if ctype, data, ok := s.cache.get(key); ok && ctype != refusedType {
		return Preview{Data: data, ContentType: ctype, ETag: etag}, nil, true
	}
	if _, msg, ok := s.cache.get(s.refusedKey(ck)); ok {
		return Preview{}, errs.Errorf("preview.Thumbnail", errs.Unsupported, "%s", msg), true
	}
	return Preview{}, nil, false
}
