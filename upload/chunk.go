package upload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"netdisk/chunker"
	"netdisk/errs"
	"netdisk/meta"
)

// PutChunk receives the bytes of chunk index. length is the announced body
// length (-1 when unknown). The bytes must be exactly the chunk's length and
// hash to hash (MD5); otherwise nothing is stored. Sending a chunk the
// session already holds is success; other bytes for an index already
// received are refused with Conflict and change nothing.
func (s *Service) PutChunk(ctx context.Context, uid int64, id string, index int64, hash string, body io.Reader, length int64) error {
	const op = "upload.Chunk"
	if !chunker.ValidHash(hash) {
		return errs.Errorf(op, errs.Invalid, "hash must be 32 lowercase hex digits")
	}
	ss, err := s.load(ctx, op, uid, id)
	if err != nil {
		return err
	}
	if err := checkIndex(op, ss, index); err != nil {
		return err
	}
	want := chunker.ChunkLen(ss.Size, ss.ChunkSize, index)
	if length > ss.ChunkSize {
		return errs.Errorf(op, errs.TooLarge, "body of %d bytes is larger than the chunk size %d", length, ss.ChunkSize)
	}
	if length >= 0 && length != want {
		return errs.Errorf(op, errs.Invalid, "chunk %d must be %d bytes, body has %d", index, want, length)
	}
	// The drive's background checksum pass waits while chunks arrive, and
	// a later chunk of this session waits for this one to add its bytes to
	// the file's checksums after it (drive/sessionsums.go).
	defer s.d.Receiving()()
	if ss.open() {
		defer s.d.ChunkArriving(ss.ID, index)()
	}
	buf := getChunkBuf(want + 1)
	reuse := true
	defer func() {
		if reuse {
			putChunkBuf(buf)
		}
	}()
	n, sum, err := readChunk(body, buf)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		if int64(n) != want {
			return errs.Errorf(op, errs.Invalid, "chunk %d must be %d bytes, body has %d", index, want, n)
		}
	case err != nil && errs.Classified(err):
		// The API marks its body's read errors where they happen (too
		// large, unreadable, client gone): they keep that kind.
		return errs.E(op, errs.Other, "", fmt.Errorf("reading the chunk body: %w", err))
	case err != nil:
		return errs.E(op, errs.Invalid, "", fmt.Errorf("reading the chunk body: %w", err))
	default: // one byte more than the chunk: refuse without reading the rest
		return errs.Errorf(op, errs.TooLarge, "chunk %d must be %d bytes, body is longer", index, want)
	}
	b := buf[:want]
	if sum.MD5 != hash {
		return errs.Errorf(op, errs.Invalid, "chunk %d hashes to %s, not %s", index, sum.MD5, hash)
	}
	if !ss.open() {
		// A late retry after the merge: fine if it is what the file holds.
		if c, ok, err := s.db.SessionChunkAt(ctx, ss.ID, index); err == nil && ok && c.SHA256 == sum.SHA256 {
			return nil
		}
		return errMerged(op)
	}
	c, ok, err := s.db.SessionChunkAt(ctx, ss.ID, index)
	if err != nil {
		return err
	}
	if ok {
		if c.SHA256 == sum.SHA256 {
			return nil // idempotent: nothing to store or count
		}
		// A received chunk is final (shared/API.md): other bytes for it
		// change nothing, whatever their hash.
		return errAlreadyReceived(op, index)
	}
	mc := meta.Chunk{SHA256: sum.SHA256, MD5: sum.MD5, Size: sum.Size}
	err = s.d.PutSessionChunk(ctx, ss.UserID, ss.ID, index, mc, b, s.now())
	// A store that failed may not be done with b: an HTTP transport (the
	// S3 store) can still be reading a request body after its answer.
	reuse = err == nil
	return sessionErr(op, index, err)
}

// readChunk fills buf from body as io.ReadFull does (the same n and err),
// and returns the identity of the bytes read but the last one of buf: the
// caller makes buf one byte longer than the chunk to see a body that is too
// long. Each piece is hashed as soon as it arrives, while still in the CPU's
// cache, rather than in two passes over the whole chunk afterwards.
func readChunk(body io.Reader, buf []byte) (int, chunker.Sum, error) {
	h := chunker.NewChunkHasher()
	want := len(buf) - 1
	n := 0
	var err error
	for n < len(buf) && err == nil {
		var k int
		k, err = body.Read(buf[n:])
		h.Write(buf[min(n, want):min(n+k, want)])
		n += k
	}
	switch {
	case n == len(buf):
		err = nil
	case n > 0 && err == io.EOF:
		err = io.ErrUnexpectedEOF
	}
	return n, h.Sum(), err
}

// Chunk bodies of pooledMin bytes or more are read into buffers kept for the
// next chunk: a fresh 4 MiB per chunk cost the daemon its zeroing and the
// garbage collector's work on every chunk received. Smaller ones (a file's
// tail) are cheap to allocate and would only crowd the pool. A buffer of
// this size comes from the allocator aligned to a page, which the store's
// direct writes need (dedup/disk.go).
var chunkBufs sync.Pool

const pooledMin = 1 << 20

func getChunkBuf(n int64) []byte {
	if n >= pooledMin {
		if p, ok := chunkBufs.Get().(*[]byte); ok && int64(cap(*p)) >= n {
			return (*p)[:n]
		}
	}
	return make([]byte, n)
}

// putChunkBuf keeps b for another chunk. The caller no longer uses it, and
// nothing it was passed to keeps it (a BlobStore.Put that succeeded is done
// with its bytes).
func putChunkBuf(b []byte) {
	if cap(b) >= pooledMin {
		chunkBufs.Put(&b)
	}
}

func checkIndex(op string, ss session, index int64) error {
	if index < 0 || index >= ss.total() {
		return errs.Errorf(op, errs.Conflict, "chunk index %d out of range: the file has %d chunk(s)", index, ss.total())
	}
	return nil
}

// HashResult answers patchHash.
type HashResult struct {
	Exists    bool
	Completed bool
	Path      string
	Challenge *Challenge
}

// PatchChunk asks whether the server holds chunk index with MD5 hash and
// SHA-256 sha (may be ""). MD5 names the chunk but does not identify its
// bytes (two different chunks can share it), so a chunk binds to the session
// only when sha names the stored bytes exactly: without sha the answer is
// always "send the bytes" (the seed's MD5-only flow loses bandwidth, never
// content), whoever holds the chunk. With it, a chunk already in this
// session or held by the same user (files or open sessions) counts as
// uploaded at once; one held only by others yields a challenge when the
// instant upload policy reveals it (reveal.go), else the same answer as
// unknown content.
func (s *Service) PatchChunk(ctx context.Context, uid int64, id string, index int64, hash, sha string) (HashResult, error) {
	const op = "upload.PatchHash"
	if !chunker.ValidHash(hash) {
		return HashResult{}, errs.Errorf(op, errs.Invalid, "hash must be 32 lowercase hex digits")
	}
	if sha != "" && !chunker.ValidSHA256(sha) {
		return HashResult{}, errs.Errorf(op, errs.Invalid, "sha256 must be 64 lowercase hex digits")
	}
	ss, err := s.load(ctx, op, uid, id)
	if err != nil {
		return HashResult{}, err
	}
	if err := checkIndex(op, ss, index); err != nil {
		return HashResult{}, err
	}
	if c, ok, err := s.db.SessionChunkAt(ctx, ss.ID, index); err != nil {
		return HashResult{}, err
	} else if ok && c.MD5 == hash && (sha == "" || c.SHA256 == sha) {
		// Held at this index: with sha it is the client's chunk; without,
		// the bytes sent are compared by SHA-256 (the same: nothing
		// changes; others: refused as below).
		return HashResult{Exists: sha != ""}, nil
	} else if ok {
		return HashResult{}, errAlreadyReceived(op, index)
	}
	if !ss.open() {
		return HashResult{}, errMerged(op)
	}
	if sha == "" {
		// The same answer for every content, so it tells nothing either.
		return HashResult{}, nil
	}
	// One lookup whatever the content, then the decision: unknown content
	// and content the policy hides take the same path to the same answer.
	want := chunker.ChunkLen(ss.Size, ss.ChunkSize, index)
	held, err := s.db.ChunksHeld(ctx, uid, hash, want, s.inst.limit())
	if err != nil {
		return HashResult{}, err
	}
	i := slices.IndexFunc(held, func(h meta.HeldChunk) bool { return h.SHA256 == sha })
	if i < 0 {
		return HashResult{}, nil
	}
	c := held[i]
	if c.Own {
		ok, err := s.claim(ctx, ss, index, c.Chunk)
		return HashResult{Exists: ok}, err
	}
	if !s.inst.reveals(c.Holders) {
		return HashResult{}, nil
	}
	ch, err := s.challenge(ctx, ss, index, []meta.Chunk{c.Chunk}, "")
	if gone(err) {
		return HashResult{}, nil
	}
	if err != nil {
		return HashResult{}, err
	}
	return HashResult{Exists: true, Challenge: ch}, nil
}

// claim records an already stored chunk at index; false when it vanished.
func (s *Service) claim(ctx context.Context, ss session, index int64, c meta.Chunk) (bool, error) {
	const op = "upload.Chunk"
	ok, err := s.d.ReuseSessionChunk(ctx, ss.UserID, ss.ID, index, c, s.now())
	if gone(err) {
		return false, nil
	}
	return ok && err == nil, sessionErr(op, index, err)
}

// PatchFile asks whether the server holds a whole file with this hash, the
// session's size and the SHA-256 name fileSHA (chunker.FileSHA256; "" when
// the client cannot give it: then the answer is always "send the bytes", as
// for chunks). The user's own copy, or one in a share they receive,
// completes the upload now; another user's
// yields a challenge over the whole file when the instant upload policy
// reveals it (reveal.go), else the same answer as unknown content.
func (s *Service) PatchFile(ctx context.Context, uid int64, id, fileHash, fileSHA string) (HashResult, error) {
	const op = "upload.PatchHash"
	if !chunker.ValidHash(fileHash) {
		return HashResult{}, errs.Errorf(op, errs.Invalid, "fileHash must be 32 lowercase hex digits")
	}
	if fileSHA != "" && !chunker.ValidSHA256(fileSHA) {
		return HashResult{}, errs.Errorf(op, errs.Invalid, "fileSha256 must be 64 lowercase hex digits")
	}
	mu := s.stripe(id)
	mu.Lock()
	defer mu.Unlock()
	ss, err := s.load(ctx, op, uid, id)
	if err != nil {
		return HashResult{}, err
	}
	if !ss.open() {
		if ss.ResultHash == fileHash {
			return HashResult{Exists: true, Completed: true, Path: ss.Path}, nil
		}
		return HashResult{}, errMerged(op)
	}
	if ss.FileHash != "" && ss.FileHash != fileHash {
		return HashResult{}, errs.Errorf(op, errs.Invalid, "fileHash differs from the one given at init")
	}
	if ss.Size == 0 || fileSHA == "" {
		// Nothing to send (merge commits the empty file), or nothing that
		// names the bytes: an MD5 match alone binds nothing.
		return HashResult{}, nil
	}
	// As for chunks: one lookup whatever the content, then the decision.
	nodeID, h, found, err := s.db.FileHeld(ctx, uid, fileHash, ss.Size, s.inst.limit())
	if err != nil {
		return HashResult{}, err
	}
	if found && h.Own {
		// Of the user's files sharing this MD5-made hash, the one with
		// these very bytes: another of them would fail the SHA-256 check
		// below and lose an instant upload the user is owed.
		own, ok, err := s.db.OwnFileWithContent(ctx, uid, fileHash, ss.Size, fileSHA)
		if err != nil {
			return HashResult{}, err
		}
		if ok {
			nodeID = own
		}
		h.Own = ok
	}
	if !h.Own {
		// Content the user reads in a share of another's is theirs to
		// bind too (drive.HeldContent: only the shared files count).
		// Looked up whether or not anyone holds the content, so the time
		// taken tells nothing either.
		held, ok, err := s.d.HeldContent(ctx, uid, fileHash, ss.Size, fileSHA)
		if err != nil {
			return HashResult{}, err
		}
		if ok {
			nodeID, h.Own, found = held, true, true
		}
	}
	if !found || !h.Own && !s.inst.reveals(h) {
		return HashResult{}, nil
	}
	fcs, err := s.db.FileChunks(ctx, nodeID)
	if err != nil {
		return HashResult{}, err
	}
	chunks, ok := sameCut(fcs, ss)
	if !ok || sha256Of(chunks) != fileSHA {
		return HashResult{}, nil
	}
	if h.Own {
		res, err := s.commit(ctx, ss, chunks, fileHash, false)
		if gone(err) {
			return HashResult{}, nil
		}
		if err != nil {
			return HashResult{}, err
		}
		return HashResult{Exists: true, Completed: true, Path: res.Path}, nil
	}
	ch, err := s.challenge(ctx, ss, -1, chunks, fileHash)
	if gone(err) {
		return HashResult{}, nil
	}
	if err != nil {
		return HashResult{}, err
	}
	return HashResult{Exists: true, Challenge: ch}, nil
}

// sha256Of is the FileSHA256 of chunks.
func sha256Of(chunks []meta.Chunk) string {
	shas := make([]string, len(chunks))
	for i, c := range chunks {
		shas[i] = c.SHA256
	}
	return chunker.FileSHA256(shas)
}

// sameCut returns the file's chunks when they are cut as this session would
// cut them (a file stored under another chunk size is not reused: content
// identity requires the same boundaries) and their hash list is coherent.
func sameCut(fcs []meta.FileChunk, ss session) ([]meta.Chunk, bool) {
	if int64(len(fcs)) != ss.total() {
		return nil, false
	}
	out := make([]meta.Chunk, len(fcs))
	for i, fc := range fcs {
		if fc.Size != chunker.ChunkLen(ss.Size, ss.ChunkSize, int64(i)) {
			return nil, false
		}
		out[i] = fc.Chunk
	}
	return out, true
}
