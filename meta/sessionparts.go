package meta

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"netdisk/errs"
)

// The parts of a sync client's chunked upload (migration 032), kept beside
// the upload session that reserves its quota: each part as the pieces it
// was cut into, chunk records the pieces' blobs were stored under. Rows go
// with their session (the foreign key), and keep their chunks alive while
// they exist (unreferenced, chunks.go).

// SessionPiece is one piece of a part of a session: the part's name, the
// piece's place in it, its chunk (with ID) and when the part arrived.
type SessionPiece struct {
	Part    string
	Seq     int64
	Chunk   Chunk
	Touched time.Time
}

// PutSessionPart records pieces (stored durably and pinned by the caller;
// c.ID zero: found or inserted by SHA-256) as part name of open session
// id, replacing a part of that name sent before, and touches the session
// at now, in one transaction. A missing session is ErrNoSession (NotFound),
// a merged one ErrSessionClosed (Conflict).
func (s *SQLStore) PutSessionPart(ctx context.Context, id, name string, pieces []Chunk, now time.Time) error {
	const op = "meta.PutSessionPart"
	return wrap(op, "", s.tx(ctx, func(tx *sql.Tx) error {
		var state string
		err := tx.QueryRowContext(ctx, `SELECT state FROM upload_sessions WHERE id = ?`, id).Scan(&state)
		if errors.Is(err, sql.ErrNoRows) {
			return noSession(op)
		}
		if err != nil {
			return err
		}
		if state != SessionOpen {
			return errs.E(op, errs.Conflict, "", ErrSessionClosed)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM session_parts WHERE session_id = ? AND name = ?`, id, name); err != nil {
			return err
		}
		for i, c := range pieces {
			if _, err := tx.ExecContext(ctx, `INSERT INTO chunks(sha256, md5, size, created_ns, reveal_draw) VALUES (?,?,?,?,?) ON CONFLICT(sha256) DO NOTHING`,
				c.SHA256, c.MD5, c.Size, now.UnixNano(), newDraw()); err != nil {
				return err
			}
			var cid int64
			if err := tx.QueryRowContext(ctx, `SELECT id FROM chunks WHERE sha256 = ?`, c.SHA256).Scan(&cid); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO session_parts(session_id, name, seq, chunk_id, touched_ns) VALUES (?,?,?,?,?)`,
				id, name, i, cid, now.UnixNano()); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE upload_sessions SET touched_ns = ? WHERE id = ?`, now.UnixNano(), id)
		return err
	}))
}

// SessionPieces returns the pieces of session id's parts, by part name and
// place (the caller orders the parts).
func (s *SQLStore) SessionPieces(ctx context.Context, id string) ([]SessionPiece, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT sp.name, sp.seq, sp.touched_ns, c.id, c.sha256, c.md5, c.size FROM session_parts sp
		JOIN chunks c ON c.id = sp.chunk_id WHERE sp.session_id = ? ORDER BY sp.name, sp.seq`, id)
	out, err := scanAll(rows, err, func(r rowScanner) (SessionPiece, error) {
		var p SessionPiece
		var touched int64
		err := r.Scan(&p.Part, &p.Seq, &touched, &p.Chunk.ID, &p.Chunk.SHA256, &p.Chunk.MD5, &p.Chunk.Size)
		p.Touched = time.Unix(0, touched)
		return p, err
	})
	return out, wrap("meta.SessionPieces", "", err)
}

// SetSessionPath sets the target path of open session id (one whose target
// is known only at its end); a missing or merged session is ErrNoSession.
func (s *SQLStore) SetSessionPath(ctx context.Context, id, path string) error {
	const op = "meta.SetSessionPath"
	res, err := s.w.ExecContext(ctx, `UPDATE upload_sessions SET path = ? WHERE id = ? AND state = 'open'`, path, id)
	if err != nil {
		return wrap(op, path, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return noSession(op)
	}
	return nil
}
