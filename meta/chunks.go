package meta

import (
	"context"
	"database/sql"
	"errors"

	"netdisk/errs"
)

const chunkCols = `id, sha256, md5, size`

func scanChunks(rows *sql.Rows, err error) ([]Chunk, error) {
	return scanAll(rows, err, scanChunk)
}

func scanChunk(r rowScanner) (Chunk, error) {
	var c Chunk
	err := r.Scan(&c.ID, &c.SHA256, &c.MD5, &c.Size)
	return c, err
}

// ChunksByMD5 returns every chunk with that MD5 (usually zero or one).
func (s *SQLStore) ChunksByMD5(ctx context.Context, md5 string) ([]Chunk, error) {
	cs, err := scanChunks(s.r.QueryContext(ctx, `SELECT `+chunkCols+` FROM chunks WHERE md5 = ?`, md5))
	return cs, wrap("meta.ChunksByMD5", "", err)
}

// ChunkBySHA256 returns the chunk with that SHA-256.
func (s *SQLStore) ChunkBySHA256(ctx context.Context, sha string) (Chunk, error) {
	var c Chunk
	err := s.r.QueryRowContext(ctx, `SELECT `+chunkCols+` FROM chunks WHERE sha256 = ?`, sha).Scan(&c.ID, &c.SHA256, &c.MD5, &c.Size)
	if errors.Is(err, sql.ErrNoRows) {
		return Chunk{}, errs.E("meta.ChunkBySHA256", errs.NotFound, "", nil)
	}
	return c, wrap("meta.ChunkBySHA256", "", err)
}

// ChunkData returns the bytes of an inline chunk (migration 007).
func (s *SQLStore) ChunkData(ctx context.Context, sha string) ([]byte, bool, error) {
	var b []byte
	err := s.r.QueryRowContext(ctx, `SELECT d.data FROM chunks c JOIN chunk_data d ON d.chunk_id = c.id WHERE c.sha256 = ?`, sha).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, wrap("meta.ChunkData", "", err)
	}
	return b, true, nil
}

// unreferenced is the condition under which a chunk is garbage: no file holds
// it, no upload session (migration 003) has received it, no part of a sync
// client's chunked upload (migration 032) is made of it and no file version
// (migration 018) keeps it. It is the one definition of a live chunk:
// whatever else holds chunks adds its clause here. A file in the trash needs
// none: its node keeps its file_chunks rows until the item is expunged
// (trash.go).
const unreferenced = `NOT EXISTS (SELECT 1 FROM file_chunks fc WHERE fc.chunk_id = chunks.id)
	AND NOT EXISTS (SELECT 1 FROM session_chunks sc WHERE sc.chunk_id = chunks.id)
	AND NOT EXISTS (SELECT 1 FROM session_parts sp WHERE sp.chunk_id = chunks.id)
	AND NOT EXISTS (SELECT 1 FROM version_chunks vc WHERE vc.chunk_id = chunks.id)`

// UnreferencedChunks lists up to limit garbage chunks.
func (s *SQLStore) UnreferencedChunks(ctx context.Context, limit int) ([]Chunk, error) {
	cs, err := scanChunks(s.r.QueryContext(ctx, `SELECT `+chunkCols+` FROM chunks WHERE `+unreferenced+` LIMIT ?`, limit))
	return cs, wrap("meta.UnreferencedChunks", "", err)
}

// DeleteChunkIfUnreferenced deletes the record when nothing references it.
func (s *SQLStore) DeleteChunkIfUnreferenced(ctx context.Context, sha string) (bool, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM chunks WHERE sha256 = ? AND `+unreferenced, sha)
	if err != nil {
		return false, wrap("meta.DeleteChunkIfUnreferenced", "", err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// EachChunk calls fn for every chunk record.
func (s *SQLStore) EachChunk(ctx context.Context, fn func(Chunk) error) error {
	rows, err := s.r.QueryContext(ctx, `SELECT `+chunkCols+` FROM chunks ORDER BY id`)
	if err != nil {
		return wrap("meta.EachChunk", "", err)
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scanChunk(rows)
		if err != nil {
			return wrap("meta.EachChunk", "", err)
		}
		if err := fn(c); err != nil {
			return err
		}
	}
	return wrap("meta.EachChunk", "", rows.Err())
}

// Stats sums the store.
func (s *SQLStore) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.r.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM users),
		(SELECT count(*) FROM nodes WHERE is_dir = 0 AND `+LiveNodes+`),
		(SELECT count(*) FROM nodes WHERE is_dir = 1 AND `+LiveNodes+`),
		(SELECT coalesce(sum(size), 0) FROM nodes WHERE is_dir = 0 AND `+LiveNodes+`),
		(SELECT coalesce(sum(size), 0) FROM chunks),
		(SELECT count(*) FROM chunks)`).Scan(&st.Users, &st.Files, &st.Dirs, &st.LogicalBytes, &st.PhysicalBytes, &st.Chunks)
	return st, wrap("meta.Stats", "", err)
}
