package drive

import (
	"bytes"
	"context"
	"errors"
	"io"

	"netdisk/dedup"
	"netdisk/meta"
)

// InlineMax is the largest file whose content the drive keeps inside the
// metadata store rather than as a blob: a one-chunk file up to this size is
// committed with its bytes in the same transaction as its tree entry, so its
// upload is durable after one fsync (the WAL commit) rather than three (blob
// file, blob directory, WAL). Beyond a few pages, the WAL's double write
// (the WAL, then the checkpoint) costs more than the blob's own fsyncs save.
const InlineMax = 64 << 10

// chunkStore is the drive's view of chunk bytes: the blob store, and the
// chunks the metadata store keeps inline (meta.Chunks.ChunkData). Open and
// Has see both; Put, Delete and Walk are the blob store's (an inline chunk's
// bytes come and go with its record). Every reader of chunk bytes (GET,
// Reader, fsck, session merges) goes through it and so needs no case of its
// own for inline chunks.
type chunkStore struct {
	dedup.BlobStore
	inline interface {
		ChunkData(ctx context.Context, sha string) ([]byte, bool, error)
	}
}

// Open returns the blob (an *os.File for the disk store, so GET keeps
// sendfile), or the inline bytes.
func (s chunkStore) Open(ctx context.Context, key dedup.Key) (io.ReadSeekCloser, error) {
	f, err := s.BlobStore.Open(ctx, key)
	if err == nil || !errors.Is(err, dedup.ErrNotFound) {
		return f, err
	}
	b, ok, ierr := s.inline.ChunkData(ctx, string(key))
	if ierr != nil {
		return nil, ierr
	}
	if !ok {
		return nil, err
	}
	return nopCloser{bytes.NewReader(b)}, nil
}

// Has reports whether the chunk's bytes are stored either way.
func (s chunkStore) Has(ctx context.Context, key dedup.Key) (bool, error) {
	ok, err := s.BlobStore.Has(ctx, key)
	if err != nil || ok {
		return ok, err
	}
	_, ok, err = s.inline.ChunkData(ctx, string(key))
	return ok, err
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// groupTx is the optional group commit of the metadata store
// (meta.SQLStore.GroupTx): concurrent commits share one WAL fsync.
type groupTx interface {
	GroupTx(ctx context.Context, fn func(*meta.Tx) error) error
}

// commitSharing says whether a change's transaction may share its commit
// with concurrent ones (group commit). Only a change that runs to the end
// whatever its caller does may: a statement cut short by a cancelled
// context could roll back the shared transaction, and everyone's change in
// it, so such a change runs on a context that cannot be cancelled.
type commitSharing bool

const (
	ownCommit    commitSharing = false // a transaction of its own; ctx may be cancelled
	sharedCommit commitSharing = true  // ctx cannot be cancelled (context.WithoutCancel)
)

// txFunc returns the store's group commit when share asks for it and the
// store has one, else its Tx.
func (d *Drive) txFunc(share commitSharing) func(ctx context.Context, fn func(*meta.Tx) error) error {
	if g, ok := d.meta.(groupTx); ok && share == sharedCommit {
		return g.GroupTx
	}
	return d.meta.Tx
}

// Unwrap names the blob store, so its optional upgrades (the S3 read
// cache's dedup.Prefetcher, which GETs look for in read.go) stay visible
// through this view.
func (s chunkStore) Unwrap() dedup.BlobStore { return s.BlobStore }

var _ dedup.Unwrapper = chunkStore{}

// inlineStore wraps blobs so chunks kept in m are readable beside them.
func inlineStore(blobs dedup.BlobStore, m meta.Store) dedup.BlobStore {
	if blobs == nil {
		return nil
	}
	return chunkStore{BlobStore: blobs, inline: m}
}
