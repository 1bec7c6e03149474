// Package dedup is netdisk's content-addressed chunk storage: the blob store
// interface (local disk today, S3-compatible object storage later) and the
// bookkeeping that keeps a chunk alive while something may still reference it.
//
// It knows nothing of users, paths or files; the drive package composes it with
// the metadata store.
package dedup

import (
	"context"
	"errors"
	"io"

	"netdisk/chunker"
)

// ErrNotFound is returned by Open and Stat for a blob the store does not hold.
var ErrNotFound = errors.New("blob not found")

// Key names a blob: the lowercase hex SHA-256 of its bytes. SHA-256, not MD5,
// because MD5 is only the protocol's name for content and may collide.
type Key string

// Valid reports whether k looks like a SHA-256 hex string, so a key can never
// be used to build a path outside the store.
func (k Key) Valid() bool { return chunker.ValidSHA256(string(k)) }

// BlobStore holds immutable blobs by key. Implementations must make Put atomic
// (a blob is either absent or complete and durable) and idempotent (putting a
// blob that exists is success), and Delete of a missing blob is success.
type BlobStore interface {
	// Put stores b under key; it returns only once the bytes are durable.
	// The caller vouches that key is the SHA-256 of b; a store may check.
	// Once Put has succeeded, b is the caller's again (it reuses chunk
	// buffers): a store keeps no reference to it.
	Put(ctx context.Context, key Key, b []byte) error
	// Open returns a reader of the blob. For the local store the concrete type
	// is *os.File, so the HTTP layer can serve it with sendfile.
	Open(ctx context.Context, key Key) (io.ReadSeekCloser, error)
	// Has reports whether the blob exists.
	Has(ctx context.Context, key Key) (bool, error)
	// Delete removes the blob; a missing blob is not an error.
	Delete(ctx context.Context, key Key) error
	// Walk calls fn for every stored blob key, in no particular order.
	Walk(ctx context.Context, fn func(Key) error) error
}

// Unwrapper is a BlobStore that wraps another and adds to it (the drive's
// view that also reads inline chunks): it names the store it wraps, so an
// optional upgrade of that store (Prefetcher) is found through any number of
// wrappers without each writing it out again.
type Unwrapper interface {
	Unwrap() BlobStore
}

// AsPrefetcher returns s, or the first store that s wraps (Unwrapper), that
// is a Prefetcher.
func AsPrefetcher(s BlobStore) (Prefetcher, bool) {
	for s != nil {
		if p, ok := s.(Prefetcher); ok {
			return p, true
		}
		u, ok := s.(Unwrapper)
		if !ok {
			break
		}
		s = u.Unwrap()
	}
	return nil, false
}
