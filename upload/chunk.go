package upload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"netdisk/chunker"
	"netdisk/dedup"
	"netdisk/drive"
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
	if !validHash(hash) {
		return errs.Errorf(op, errs.Invalid, "hash must be 32 lowercase hex digits")
	}
	ss, err := s.load(ctx, s.db.ReadDB(), op, uid, id)
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
	buf := make([]byte, want+1)
	n, err := io.ReadFull(body, buf)
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
	sum := chunker.HashChunk(b)
	if sum.MD5 != hash {
		return errs.Errorf(op, errs.Invalid, "chunk %d hashes to %s, not %s", index, sum.MD5, hash)
	}
	if ss.State == stateMerged {
		// A late retry after the merge: fine if it is what the file holds.
		if c, ok, err := s.heldAt(ctx, ss.ID, index); err == nil && ok && c.SHA256 == sum.SHA256 {
			return nil
		}
		return errs.Errorf(op, errs.Conflict, "the session is already merged")
	}
	c, ok, err := s.heldAt(ctx, ss.ID, index)
	if err != nil {
		return wrap(op, ss.Path, err)
	}
	if ok {
		if c.SHA256 == sum.SHA256 {
			return nil // idempotent: nothing to store or count
		}
		// A received chunk is final (shared/API.md): other bytes for it
		// change nothing, whatever their hash.
		return errAlreadyReceived(op, index)
	}
	key := dedup.Key(sum.SHA256)
	s.d.Pins().Pin(key)
	defer s.d.Pins().Unpin(key)
	// Durable first, recorded second: a crash in between leaves an orphan blob
	// for GC, never a record without bytes.
	if err := s.d.StoreBlob(ctx, key, b); err != nil {
		return wrap(op, ss.Path, err)
	}
	err = s.record(ctx, ss, index, meta.Chunk{SHA256: sum.SHA256, MD5: sum.MD5, Size: sum.Size})
	return wrap(op, ss.Path, drive.DiskFull(op, err))
}

// errAlreadyReceived refuses other content for a chunk index the session
// already holds.
func errAlreadyReceived(op string, index int64) error {
	return errs.Errorf(op, errs.Conflict, "chunk %d was already received with other bytes", index)
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

// PatchChunk asks whether the server holds chunk index with MD5 hash. A chunk
// already in this session or held by the same user (files or open sessions)
// counts as uploaded at once; one held only by others yields a challenge.
// Several stored chunks sharing that MD5 are ambiguous without the bytes:
// the answer is then "send the bytes", which are compared by SHA-256.
func (s *Service) PatchChunk(ctx context.Context, uid int64, id string, index int64, hash string) (HashResult, error) {
	const op = "upload.PatchHash"
	if !validHash(hash) {
		return HashResult{}, errs.Errorf(op, errs.Invalid, "hash must be 32 lowercase hex digits")
	}
	ss, err := s.load(ctx, s.db.ReadDB(), op, uid, id)
	if err != nil {
		return HashResult{}, err
	}
	if err := checkIndex(op, ss, index); err != nil {
		return HashResult{}, err
	}
	if c, ok, err := s.heldAt(ctx, ss.ID, index); err != nil {
		return HashResult{}, wrap(op, "", err)
	} else if ok && c.MD5 == hash {
		return HashResult{Exists: true}, nil
	} else if ok {
		return HashResult{}, errAlreadyReceived(op, index)
	}
	if ss.State != stateOpen {
		return HashResult{}, errs.Errorf(op, errs.Conflict, "the session is already merged")
	}
	want := chunker.ChunkLen(ss.Size, ss.ChunkSize, index)
	cands, err := s.d.Meta().ChunksByMD5(ctx, hash)
	if err != nil {
		return HashResult{}, err
	}
	var match []meta.Chunk
	for _, c := range cands {
		if c.Size == want {
			match = append(match, c)
		}
	}
	if len(match) != 1 {
		return HashResult{}, nil
	}
	c := match[0]
	owned, err := s.userHolds(ctx, uid, c.ID)
	if err != nil {
		return HashResult{}, wrap(op, "", err)
	}
	if owned {
		ok, err := s.claim(ctx, ss, index, c)
		return HashResult{Exists: ok}, err
	}
	ch, err := s.challenge(ctx, ss, index, []meta.Chunk{c}, "")
	if errors.Is(err, errGone) {
		return HashResult{}, nil
	}
	if err != nil {
		return HashResult{}, wrap(op, "", err)
	}
	return HashResult{Exists: true, Challenge: ch}, nil
}

// claim records an already stored chunk at index; false when it vanished.
func (s *Service) claim(ctx context.Context, ss session, index int64, c meta.Chunk) (bool, error) {
	key := dedup.Key(c.SHA256)
	s.d.Pins().Pin(key)
	defer s.d.Pins().Unpin(key)
	if ok, err := s.d.Blobs().Has(ctx, key); err != nil || !ok {
		return false, err
	}
	err := s.record(ctx, ss, index, c)
	if errors.Is(err, errGone) {
		return false, nil
	}
	return err == nil, wrap("upload.PatchHash", ss.Path, err)
}

// userHolds reports whether one of the user's files or open sessions
// references the chunk.
func (s *Service) userHolds(ctx context.Context, uid, chunkID int64) (bool, error) {
	var one int
	err := s.db.ReadDB().QueryRowContext(ctx, `SELECT 1 WHERE
		EXISTS (SELECT 1 FROM file_chunks fc JOIN nodes n ON n.id = fc.node_id WHERE fc.chunk_id = ? AND n.user_id = ?)
		OR EXISTS (SELECT 1 FROM session_chunks sc JOIN upload_sessions us ON us.id = sc.session_id WHERE sc.chunk_id = ? AND us.user_id = ?)`,
		chunkID, uid, chunkID, uid).Scan(&one)
	if err != nil && !isNoRows(err) {
		return false, err
	}
	return one == 1, nil
}

// PatchFile asks whether the server holds a whole file with this hash and the
// session's size. The user's own copy completes the upload now; another
// user's yields a challenge over the whole file.
func (s *Service) PatchFile(ctx context.Context, uid int64, id, fileHash string) (HashResult, error) {
	const op = "upload.PatchHash"
	if !validHash(fileHash) {
		return HashResult{}, errs.Errorf(op, errs.Invalid, "fileHash must be 32 lowercase hex digits")
	}
	mu := s.stripe(id)
	mu.Lock()
	defer mu.Unlock()
	ss, err := s.load(ctx, s.db.ReadDB(), op, uid, id)
	if err != nil {
		return HashResult{}, err
	}
	if ss.State == stateMerged {
		if ss.ResultHash == fileHash {
			return HashResult{Exists: true, Completed: true, Path: ss.Path}, nil
		}
		return HashResult{}, errs.Errorf(op, errs.Conflict, "the session is already merged")
	}
	if ss.FileHash != "" && ss.FileHash != fileHash {
		return HashResult{}, errs.Errorf(op, errs.Invalid, "fileHash differs from the one given at init")
	}
	if ss.Size == 0 {
		return HashResult{}, nil // nothing to send: merge commits the empty file
	}
	db := s.db.ReadDB()
	var nodeID int64
	err = db.QueryRowContext(ctx, `SELECT id FROM nodes WHERE file_hash = ? AND is_dir = 0 AND size = ? AND user_id = ? LIMIT 1`,
		fileHash, ss.Size, uid).Scan(&nodeID)
	own := err == nil
	if isNoRows(err) {
		err = db.QueryRowContext(ctx, `SELECT id FROM nodes WHERE file_hash = ? AND is_dir = 0 AND size = ? LIMIT 1`,
			fileHash, ss.Size).Scan(&nodeID)
	}
	if isNoRows(err) {
		return HashResult{}, nil
	}
	if err != nil {
		return HashResult{}, wrap(op, "", err)
	}
	fcs, err := s.d.Meta().FileChunks(ctx, nodeID)
	if err != nil {
		return HashResult{}, err
	}
	chunks, ok := sameCut(fcs, ss)
	if !ok {
		return HashResult{}, nil
	}
	if own {
		res, err := s.commit(ctx, ss, chunks, fileHash)
		if errors.Is(err, errGone) {
			return HashResult{}, nil
		}
		if err != nil {
			return HashResult{}, err
		}
		return HashResult{Exists: true, Completed: true, Path: res.Path}, nil
	}
	ch, err := s.challenge(ctx, ss, -1, chunks, fileHash)
	if errors.Is(err, errGone) {
		return HashResult{}, nil
	}
	if err != nil {
		return HashResult{}, wrap(op, "", err)
	}
	return HashResult{Exists: true, Challenge: ch}, nil
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

func isNoRows(err error) bool { return err != nil && errors.Is(err, errNoRows) }

// readRange reads n bytes at off of the content made of chunks in order.
func (s *Service) readRange(ctx context.Context, chunks []meta.Chunk, off, n int64) ([]byte, error) {
	out := make([]byte, 0, n)
	var base int64
	for _, c := range chunks {
		if n == 0 {
			break
		}
		if off >= base+c.Size {
			base += c.Size
			continue
		}
		in := off - base
		l := min(c.Size-in, n)
		f, err := s.d.Blobs().Open(ctx, dedup.Key(c.SHA256))
		if errors.Is(err, dedup.ErrNotFound) {
			return nil, errGone
		}
		if err != nil {
			return nil, err
		}
		buf := make([]byte, l)
		_, err = f.Seek(in, io.SeekStart)
		if err == nil {
			_, err = io.ReadFull(f, buf)
		}
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read chunk %s: %w", c.SHA256, err)
		}
		out = append(out, buf...)
		off += l
		n -= l
		base += c.Size
	}
	if n != 0 {
		return nil, errGone
	}
	return bytes.Clone(out), nil
}
