package meta

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"slices"
)

// Instant upload's lookups (migration 007). Whether patchHash reveals that
// another user holds some content depends on how many distinct users hold it
// and on a secret random draw fixed for that content (upload/reveal.go turns
// both into an answer). Both come back from one read-only statement per
// lookup, whatever the content: the work, and so the time, of a lookup does
// not depend on whether the content exists. Draws are made when the content
// is first recorded (a chunk record, a file version), never on a lookup.

// DrawRange bounds content draws: every draw is in [0, DrawRange).
const DrawRange = 1 << 31

// NoDraw is the draw of content recorded without one (none should remain
// after migration 007's backfill); callers treat it as the most cautious.
const NoDraw = -1

// newDraw returns a fresh secret draw from crypto/rand.
func newDraw() int64 {
	var b [8]byte
	rand.Read(b[:]) // never fails (since Go 1.24 it crashes the program instead)
	return int64(binary.LittleEndian.Uint64(b[:]) % DrawRange)
}

// Holders is who holds some stored content, as instant upload weighs it.
type Holders struct {
	// Own: the asking user holds it (for a chunk: in a file or an upload
	// session of theirs; for a file: a file of theirs).
	Own bool
	// Owners counts the distinct users whose files hold it, up to the
	// caller's limit. Upload sessions never count: content only in sessions
	// has no owner yet.
	Owners int
	// Draw is the content's secret random draw in [0, DrawRange), fixed when
	// the content was first recorded (NoDraw when it has none). Never shown
	// to users.
	Draw int64
}

// HeldChunk is a stored chunk with its holders.
type HeldChunk struct {
	Chunk
	Holders
}

// ChunksHeld returns every chunk with that MD5 and size (usually zero or
// one) with who holds it: Own for uid, Owners counted up to limit.
func (s *SQLStore) ChunksHeld(ctx context.Context, uid int64, md5 string, size int64, limit int) ([]HeldChunk, error) {
	const op = "meta.ChunksHeld"
	// The asked name LEFT JOIN the chunks: unknown content still yields a
	// row, and its subqueries run (on a NULL id, finding nothing), so the
	// statement does about the same work whether the content exists. (The
	// casts and the subqueries' aliases are for PostgreSQL, which runs the
	// same statement: postgres_dialect.go.)
	rows, err := s.r.QueryContext(ctx, `SELECT c.id, c.sha256, c.md5, c.size, c.reveal_draw,
		EXISTS (SELECT 1 FROM file_chunks fc JOIN nodes n ON n.id = fc.node_id WHERE fc.chunk_id = c.id AND n.user_id = ?1)
		OR EXISTS (SELECT 1 FROM session_chunks sc JOIN upload_sessions us ON us.id = sc.session_id WHERE sc.chunk_id = c.id AND us.user_id = ?1),
		(SELECT count(*) FROM (SELECT DISTINCT n.user_id FROM file_chunks fc JOIN nodes n ON n.id = fc.node_id WHERE fc.chunk_id = c.id LIMIT ?2) o)
		FROM (SELECT CAST(?3 AS TEXT) AS md5, CAST(?4 AS BIGINT) AS size) q LEFT JOIN chunks c ON c.md5 = q.md5 AND c.size = q.size`, uid, limit, md5, size)
	held, err := scanAll(rows, err, func(r rowScanner) (HeldChunk, error) {
		var h HeldChunk
		var id, size, draw sql.NullInt64
		var sha, md sql.NullString
		err := r.Scan(&id, &sha, &md, &size, &draw, &h.Own, &h.Owners)
		h.ID, h.SHA256, h.MD5, h.Size, h.Draw = id.Int64, sha.String, md.String, size.Int64, draw.Int64
		return h, err
	})
	if err != nil {
		return nil, wrap(op, "", err)
	}
	// The asked name's row has no chunk (a NULL id, 0 here: chunk ids start
	// at 1).
	return slices.DeleteFunc(held, func(h HeldChunk) bool { return h.ID == 0 }), nil
}

// FileHeld finds a file version of fileHash and size, uid's own when uid has
// one, else any user's, and returns its node id (for FileChunks) with who
// holds that content: Own for uid, Owners counted up to limit, the draw of
// the file hash. found is false when no file has it.
func (s *SQLStore) FileHeld(ctx context.Context, uid int64, fileHash string, size int64, limit int) (nodeID int64, h Holders, found bool, err error) {
	const op = "meta.FileHeld"
	if fileHash == "" {
		// No content has it: folders and symbolic links carry "", and a
		// link's target is no content to bind.
		return 0, Holders{}, false, nil
	}
	var id sql.NullInt64
	// A file in the trash holds no content for this: deleted is not held.
	err = s.r.QueryRowContext(ctx, `WITH m AS (SELECT id, user_id FROM nodes WHERE file_hash = ?1 AND size = ?2 AND is_dir = 0 AND `+LiveNodes+`)
		SELECT coalesce((SELECT id FROM m WHERE user_id = ?3 LIMIT 1), (SELECT id FROM m LIMIT 1)),
		EXISTS (SELECT 1 FROM m WHERE user_id = ?3),
		(SELECT count(*) FROM (SELECT DISTINCT user_id FROM m LIMIT ?4) o),
		coalesce((SELECT draw FROM file_draws WHERE file_hash = ?1), ?5)`,
		fileHash, size, uid, limit, NoDraw).Scan(&id, &h.Own, &h.Owners, &h.Draw)
	if err != nil {
		return 0, Holders{}, false, wrap(op, "", err)
	}
	if !id.Valid {
		return 0, Holders{}, false, nil
	}
	return id.Int64, h, true, nil
}

// drawFile gives a file hash its draw unless it has one.
func drawFile(ctx context.Context, tx *sql.Tx, fileHash string) error {
	if fileHash == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO file_draws(file_hash, draw) VALUES (?, ?) ON CONFLICT(file_hash) DO NOTHING`, fileHash, newDraw())
	return err
}

// drawExisting gives every chunk and file content recorded before migration
// 007 its draw, inside the migration's transaction.
func drawExisting(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM chunks WHERE reveal_draw = ?`, NoDraw)
	ids, err := scanAll(rows, err, func(r rowScanner) (int64, error) {
		var id int64
		err := r.Scan(&id)
		return id, err
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, `UPDATE chunks SET reveal_draw = ? WHERE id = ?`, newDraw(), id); err != nil {
			return err
		}
	}
	rows, err = tx.QueryContext(ctx, `SELECT DISTINCT file_hash FROM nodes WHERE is_dir = 0 AND file_hash != ''`)
	hashes, err := scanAll(rows, err, scanString)
	if err != nil {
		return err
	}
	for _, h := range hashes {
		if err := drawFile(ctx, tx, h); err != nil {
			return err
		}
	}
	return nil
}

// maxSameHashContents bounds the distinct contents under one file hash that
// OwnFileWithContent compares: more than one needs an MD5 collision, so
// this many is already an attack, and the lookup stays bounded.
const maxSameHashContents = 16

// OwnFileWithContent compares, of uid's files with the file hash and size,
// one per distinct first chunk (copies of one content are one candidate),
// each one's SHA-256 name with fileSHA.
func (s *SQLStore) OwnFileWithContent(ctx context.Context, uid int64, fileHash string, size int64, fileSHA string) (int64, bool, error) {
	return s.fileWithContent(ctx, "meta.OwnFileWithContent", uid, "", nil, fileHash, size, fileSHA)
}

// FileWithContentAt is OwnFileWithContent among uid's files at or below
// path at: what a share of that node lets its recipients read.
func (s *SQLStore) FileWithContentAt(ctx context.Context, uid int64, at string, fileHash string, size int64, fileSHA string) (int64, bool, error) {
	return s.fileWithContent(ctx, "meta.FileWithContentAt", uid, ` AND (n.path = ? OR (n.path >= ? AND n.path < ?))`,
		[]any{at, at + "/", at + "0"}, fileHash, size, fileSHA)
}

// fileWithContent is OwnFileWithContent among uid's files that also
// satisfy where (on nodes n) with its args.
func (s *SQLStore) fileWithContent(ctx context.Context, op string, uid int64, where string, whereArgs []any, fileHash string, size int64, fileSHA string) (int64, bool, error) {
	if fileHash == "" || fileSHA == "" {
		return 0, false, nil
	}
	args := append(append([]any{uid, fileHash, size}, whereArgs...), maxSameHashContents)
	rows, err := s.r.QueryContext(ctx, `SELECT min(n.id) FROM nodes n JOIN file_chunks fc ON fc.node_id = n.id AND fc.idx = 0
		WHERE n.user_id = ? AND n.file_hash = ? AND n.size = ? AND n.is_dir = 0 AND n.`+LiveNodes+where+`
		GROUP BY fc.chunk_id ORDER BY 1 LIMIT ?`, args...)
	ids, err := scanAll(rows, err, func(r rowScanner) (int64, error) {
		var id int64
		return id, r.Scan(&id)
	})
	if err != nil {
		return 0, false, wrap(op, "", err)
	}
	for _, id := range ids {
		fcs, err := s.FileChunks(ctx, id)
		if err != nil {
			return 0, false, err
		}
		if ContentSHA256(fcs) == fileSHA {
			return id, true, nil
		}
	}
	return 0, false, nil
}
