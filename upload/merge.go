package upload

import (
	"context"
	"errors"
	"fmt"

	"netdisk/chunker"
	"netdisk/errs"
	"netdisk/meta"
)

// Merge commits a session whose chunks are all present and whose recomputed
// file hash equals fileHash, and, when fileSHA is given, whose chunks' SHA-256
// name (chunker.FileSHA256) equals it: a resumed session may hold chunks of
// other content with the same MD5s, which only the SHA-256 tells apart. A
// retried merge of a merged session answers the same result.
func (s *Service) Merge(ctx context.Context, uid int64, id, fileHash, fileSHA string) (Result, error) {
	return s.merge(ctx, uid, id, fileHash, fileSHA, false)
}

// MergeFree is Merge that replaces nothing: when the session's path is
// taken at the commit, the file goes in at the first free numbered name
// beside it (meta.NewFile.FreeName), and Result.Path says where.
func (s *Service) MergeFree(ctx context.Context, uid int64, id, fileHash, fileSHA string) (Result, error) {
	return s.merge(ctx, uid, id, fileHash, fileSHA, true)
}

func (s *Service) merge(ctx context.Context, uid int64, id, fileHash, fileSHA string, free bool) (Result, error) {
	const op = "upload.Merge"
	if !chunker.ValidHash(fileHash) {
		return Result{}, errs.Errorf(op, errs.Invalid, "fileHash must be 32 lowercase hex digits")
	}
	if fileSHA != "" && !chunker.ValidSHA256(fileSHA) {
		return Result{}, errs.Errorf(op, errs.Invalid, "fileSha256 must be 64 lowercase hex digits")
	}
	mu := s.stripe(id)
	mu.Lock()
	defer mu.Unlock()
	ss, err := s.load(ctx, op, uid, id)
	if err != nil {
		return Result{}, err
	}
	if !ss.open() {
		if ss.ResultHash != fileHash {
			return Result{}, errs.Errorf(op, errs.Mismatch, "the session was merged with file hash %s", ss.ResultHash)
		}
		return ss.result(), nil
	}
	if ss.FileHash != "" && ss.FileHash != fileHash {
		// init promised this content: a merge of other content is refused
		// rather than silently committing something else.
		return Result{}, errs.E(op, errs.Mismatch, ss.Path, fmt.Errorf("fileHash %s differs from %s given at init", fileHash, ss.FileHash))
	}
	held, err := s.db.SessionChunks(ctx, ss.ID)
	if err != nil {
		return Result{}, err
	}
	at := make(map[int64]meta.Chunk, len(held))
	for _, c := range held {
		at[c.Index] = c.Chunk
	}
	total := ss.total()
	missing := []int64{}
	chunks := make([]meta.Chunk, 0, total)
	for i := int64(0); i < total; i++ {
		c, ok := at[i]
		if !ok {
			missing = append(missing, i)
			continue
		}
		chunks = append(chunks, c)
	}
	if len(missing) > 0 {
		return Result{}, errs.E(op, errs.Conflict, ss.Path, &MissingError{Missing: missing})
	}
	md5s := make([]string, len(chunks))
	for i, c := range chunks {
		md5s[i] = c.MD5
	}
	if got := chunker.FileHash(md5s); got != fileHash {
		return Result{}, errs.E(op, errs.Mismatch, ss.Path, fmt.Errorf("file hash %s does not match the chunks (%s)", fileHash, got))
	}
	if fileSHA != "" && sha256Of(chunks) != fileSHA {
		return Result{}, errs.E(op, errs.Mismatch, ss.Path, errors.New("the chunks held have the file's MD5s but other bytes (fileSha256 differs)"))
	}
	return s.commit(ctx, ss, chunks, fileHash, free)
}

// commit makes chunks the file at the session's path and marks the session
// merged: drive.CommitSession, one transaction with the quota settlement.
func (s *Service) commit(ctx context.Context, ss session, chunks []meta.Chunk, fileHash string, free bool) (Result, error) {
	const op = "upload.Merge"
	f := meta.NewFile{Size: ss.Size, FileHash: fileHash, Chunks: chunks, FreeName: free}
	n, err := s.d.CommitSession(ctx, ss.UserID, ss.Path, ss.ID, f, s.now())
	if errors.Is(err, meta.ErrNoSession) {
		return Result{}, errUnknown(op) // expired or aborted meanwhile
	}
	if err != nil {
		return Result{}, err
	}
	ss.ResultHash = fileHash
	res := ss.result()
	if free {
		// Where the file went; otherwise the session's path, the caller's
		// own terms (a commit through a share returns the owner's).
		res.Path = n.Path
	}
	return res, nil
}
