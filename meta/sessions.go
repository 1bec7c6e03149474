package meta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"netdisk/errs"
)

// Upload sessions of the chunked upload API (migration 003): the rows package
// upload keeps its protocol state in. A session's chunks are referenced from
// session_chunks, so garbage collection keeps them until the session merges,
// is dropped or expires; dropping a session drops its chunks' references and
// its challenges with it. Every method that closes a session (MergeSession,
// DropSession, DropIdleSession) settles the quota flushes of the upload in the
// same transaction (quota.go), as the ledger requires.

// Session states.
const (
	SessionOpen   = "open"
	SessionMerged = "merged"
)

// Session is an upload session.
type Session struct {
	ID         string // random hex, chosen by the caller
	UserID     int64
	Path       string // cleaned target path
	Size       int64  // declared file size
	ChunkSize  int64  // the chunk size the session is cut at
	FileHash   string // declared at init, "" when not given
	State      string // SessionOpen or SessionMerged
	Received   int64  // bytes of the chunks recorded while open
	Replaces   int64  // size of the file at Path when the session began
	ResultHash string // merged: the committed file hash
	Touched    time.Time
}

// SessionChunk is a chunk a session holds at an index.
type SessionChunk struct {
	Index int64
	Chunk
}

// OpenSession is an open session with the chunks it holds, as the quota
// ledger rebuilds from it.
type OpenSession struct {
	ID       string
	UserID   int64
	Size     int64
	Held     []int64 // indexes held, ascending
	Received int64   // sum of the sizes of the held chunks
}

// Challenge is a pending proof-of-ownership challenge of a session: single
// use, expiring. Index is a chunk index or -1 for the whole file; Proof is
// the expected answer; Target is the caller's description of what a right
// proof unlocks (opaque to the store).
type Challenge struct {
	Index   int64
	Nonce   string
	Proof   string
	Target  string
	Expires time.Time
}

const sessionCols = `id, user_id, path, size, chunk_size, file_hash, state, received, replaces, result_hash, touched_ns`

func scanSession(row interface{ Scan(...any) error }) (Session, error) {
	var ss Session
	var touched int64
	err := row.Scan(&ss.ID, &ss.UserID, &ss.Path, &ss.Size, &ss.ChunkSize, &ss.FileHash, &ss.State,
		&ss.Received, &ss.Replaces, &ss.ResultHash, &touched)
	ss.Touched = time.Unix(0, touched)
	return ss, err
}

func noSession(op string) error { return errs.E(op, errs.NotFound, "", ErrNoSession) }

// resumeTx touches the newest open session of uid at path with that size,
// touched at or after notBefore and compatible with fileHash ("" matches any;
// a session without a hash takes fileHash), and returns its id; "" when none.
func resumeTx(ctx context.Context, tx *sql.Tx, uid int64, path string, size int64, fileHash string, notBefore, now time.Time) (string, error) {
	var id string
	err := tx.QueryRowContext(ctx, `SELECT id FROM upload_sessions WHERE user_id = ? AND path = ? AND size = ? AND state = 'open'
		AND touched_ns >= ? AND (? = '' OR file_hash IN ('', ?)) ORDER BY touched_ns DESC LIMIT 1`,
		uid, path, size, notBefore.UnixNano(), fileHash, fileHash).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	_, err = tx.ExecContext(ctx, `UPDATE upload_sessions SET touched_ns = ?, file_hash = CASE WHEN ? = '' THEN file_hash ELSE ? END WHERE id = ?`,
		now.UnixNano(), fileHash, fileHash, id)
	return id, err
}

// ResumeSession finds the newest open session of uid for path and size,
// active at or after notBefore, whose file hash is fileHash or unknown
// (fileHash "" matches any), touches it at now (recording fileHash when
// given) and returns its id; "" when there is none.
func (s *SQLStore) ResumeSession(ctx context.Context, uid int64, path string, size int64, fileHash string, notBefore, now time.Time) (string, error) {
	var id string
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		id, err = resumeTx(ctx, tx, uid, path, size, fileHash, notBefore, now)
		return err
	})
	return id, wrap("meta.ResumeSession", path, err)
}

// CreateSession inserts ss (open, touched at now) unless a session
// ResumeSession would find exists: then it touches that one instead. It
// returns the id of the session in use, ss.ID or the other one. A taken
// ss.ID is Exists; an unknown user is Other (a foreign key).
func (s *SQLStore) CreateSession(ctx context.Context, ss Session, notBefore, now time.Time) (string, error) {
	id := ss.ID
	err := s.tx(ctx, func(tx *sql.Tx) error {
		other, err := resumeTx(ctx, tx, ss.UserID, ss.Path, ss.Size, ss.FileHash, notBefore, now)
		if err != nil || other != "" {
			id = other
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO upload_sessions(id, user_id, path, size, chunk_size, file_hash, replaces, created_ns, touched_ns)
			VALUES (?,?,?,?,?,?,?,?,?)`, ss.ID, ss.UserID, ss.Path, ss.Size, ss.ChunkSize, ss.FileHash, ss.Replaces, now.UnixNano(), now.UnixNano())
		return err
	})
	return id, wrap("meta.CreateSession", ss.Path, err)
}

// Session returns uid's session id. Another user's session is NotFound
// (ErrNoSession), exactly as a missing one.
func (s *SQLStore) Session(ctx context.Context, uid int64, id string) (Session, error) {
	const op = "meta.Session"
	ss, err := scanSession(s.r.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM upload_sessions WHERE id = ? AND user_id = ?`, id, uid))
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, noSession(op)
	}
	return ss, wrap(op, "", err)
}

// SessionChunks returns the chunks session id holds, by index.
func (s *SQLStore) SessionChunks(ctx context.Context, id string) ([]SessionChunk, error) {
	const op = "meta.SessionChunks"
	rows, err := s.r.QueryContext(ctx, `SELECT sc.idx, c.id, c.sha256, c.md5, c.size FROM session_chunks sc
		JOIN chunks c ON c.id = sc.chunk_id WHERE sc.session_id = ? ORDER BY sc.idx`, id)
	out, err := scanAll(rows, err, func(r rowScanner) (SessionChunk, error) {
		var sc SessionChunk
		err := r.Scan(&sc.Index, &sc.ID, &sc.SHA256, &sc.MD5, &sc.Size)
		return sc, err
	})
	return out, wrap(op, "", err)
}

// SessionChunkAt returns the chunk session id holds at idx, and whether it
// holds one.
func (s *SQLStore) SessionChunkAt(ctx context.Context, id string, idx int64) (Chunk, bool, error) {
	var c Chunk
	err := s.r.QueryRowContext(ctx, `SELECT c.id, c.sha256, c.md5, c.size FROM session_chunks sc JOIN chunks c ON c.id = sc.chunk_id
		WHERE sc.session_id = ? AND sc.idx = ?`, id, idx).Scan(&c.ID, &c.SHA256, &c.MD5, &c.Size)
	if errors.Is(err, sql.ErrNoRows) {
		return Chunk{}, false, nil
	}
	return c, err == nil, wrap("meta.SessionChunkAt", "", err)
}

// AddSessionChunk records c as the chunk at idx of open session id, counts
// its bytes in Received and touches the session at now, in one transaction.
// With c.ID zero the chunk record is found or inserted by SHA-256 (the caller
// stored the blob durably first and pins it); with c.ID set the record must
// still exist with that SHA-256, else ErrChunkGone (NotFound). The same chunk
// at the same index again is success and changes nothing; another chunk
// there is ErrIndexTaken (Conflict); a missing session is ErrNoSession
// (NotFound), a merged one ErrSessionClosed (Conflict).
func (s *SQLStore) AddSessionChunk(ctx context.Context, id string, idx int64, c Chunk, now time.Time) error {
	const op = "meta.AddSessionChunk"
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
		cid := c.ID
		if cid == 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO chunks(sha256, md5, size, created_ns, reveal_draw) VALUES (?,?,?,?,?) ON CONFLICT(sha256) DO NOTHING`,
				c.SHA256, c.MD5, c.Size, now.UnixNano(), newDraw()); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, `SELECT id FROM chunks WHERE sha256 = ?`, c.SHA256).Scan(&cid); err != nil {
				return err
			}
		} else {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM chunks WHERE id = ? AND sha256 = ?`, c.ID, c.SHA256).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return errs.E(op, errs.NotFound, "", ErrChunkGone)
			}
			if err != nil {
				return err
			}
		}
		var prev sql.NullInt64
		err = tx.QueryRowContext(ctx, `SELECT chunk_id FROM session_chunks WHERE session_id = ? AND idx = ?`, id, idx).Scan(&prev)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if prev.Valid && prev.Int64 == cid {
			return nil
		}
		if prev.Valid {
			// Checked here, in the transaction: of two different bodies for
			// one index racing each other, the first one wins.
			return errs.E(op, errs.Conflict, "", ErrIndexTaken)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO session_chunks(session_id, idx, chunk_id) VALUES (?,?,?)`, id, idx, cid); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE upload_sessions SET received = received + ?, touched_ns = ? WHERE id = ?`, c.Size, now.UnixNano(), id)
		return err
	}))
}

// MergeSession commits f as the file at open session id's path and closes
// the session, in one transaction: the file version is committed as
// CommitFileTx does (its growth of the user's finished bytes bounded by the
// session's declared size: errs.Quota beyond), the upload's quota flushes
// are settled (settleTx), and the session becomes merged with resultHash,
// Received 0, touched at now. It returns the node, the growth of the
// finished bytes and that of the metadata charge (a new file's entry,
// charge.go; not checked against the total here: the drive reserved it in
// the ledger before the merge, drive.CommitSession). A session
// that is missing or no longer open is ErrNoSession (NotFound): it expired
// or was aborted meanwhile, and its reservation is gone. Tree errors are
// CommitFile's.
func (s *SQLStore) MergeSession(ctx context.Context, id string, f NewFile, resultHash string, now time.Time) (Node, int64, int64, error) {
	const op = "meta.MergeSession"
	var n Node
	var growth, metaGrowth int64
	var path string
	err := s.tx(ctx, func(tx *sql.Tx) error {
		ss, err := scanSession(tx.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM upload_sessions WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) || err == nil && ss.State != SessionOpen {
			return noSession(op)
		}
		if err != nil {
			return err
		}
		path = ss.Path
		if n, growth, metaGrowth, err = s.commitFileTx(ctx, tx, op, ss.UserID, ss.Path, f, false); err != nil {
			return err
		}
		if growth > ss.Size {
			return errs.E(op, errs.Quota, ss.Path, fmt.Errorf("quota exceeded: the change needs %d bytes, %d were reserved (the tree changed meanwhile)", growth, ss.Size))
		}
		if _, err := settleTx(ctx, tx, ss.UserID, ss.ID, now); err != nil {
			return err
		}
		// The parts a sync client sent are in the file now (re-cut): their
		// pieces need not outlive the merge until the session row goes.
		if _, err := tx.ExecContext(ctx, `DELETE FROM session_parts WHERE session_id = ?`, id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE upload_sessions SET state = 'merged', received = 0, result_hash = ?, touched_ns = ? WHERE id = ?`,
			resultHash, now.UnixNano(), id)
		return err
	})
	if err != nil {
		return Node{}, 0, 0, wrap(op, path, err)
	}
	return n, growth, metaGrowth, nil
}

// dropTx deletes session id (its chunk references and challenges go with it)
// and, when it was open, settles its quota flushes. It returns the session as
// it was; found is false when there was none.
func dropTx(ctx context.Context, tx *sql.Tx, id string, now time.Time) (ss Session, found bool, err error) {
	ss, err = scanSession(tx.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM upload_sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM upload_sessions WHERE id = ?`, id); err != nil {
		return Session{}, false, err
	}
	if ss.State == SessionOpen {
		if _, err := settleTx(ctx, tx, ss.UserID, ss.ID, now); err != nil {
			return Session{}, false, err
		}
	}
	return ss, true, nil
}

// DropSession deletes session id in one transaction with the settlement of
// an open one's quota flushes, and returns it as it was. A missing session is
// success with found false (a drop is idempotent).
func (s *SQLStore) DropSession(ctx context.Context, id string, now time.Time) (Session, bool, error) {
	var ss Session
	var found bool
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		ss, found, err = dropTx(ctx, tx, id, now)
		return err
	})
	return ss, found, wrap("meta.DropSession", "", err)
}

// idle selects the sessions expiry removes: open ones untouched since
// openBefore, merged ones untouched since mergedBefore.
const idle = `((state = 'open' AND touched_ns < ?) OR (state = 'merged' AND touched_ns < ?))`

// IdleSessions returns the ids of up to limit sessions DropIdleSession would
// drop.
func (s *SQLStore) IdleSessions(ctx context.Context, openBefore, mergedBefore time.Time, limit int) ([]string, error) {
	const op = "meta.IdleSessions"
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM upload_sessions WHERE `+idle+` LIMIT ?`, openBefore.UnixNano(), mergedBefore.UnixNano(), limit)
	ids, err := scanAll(rows, err, scanString)
	return ids, wrap(op, "", err)
}

// DropIdleSession is DropSession of a session that is still idle (open and
// untouched since openBefore, or merged and untouched since mergedBefore)
// when the transaction looks: a chunk that touched it meanwhile keeps it.
// dropped reports whether it was dropped.
func (s *SQLStore) DropIdleSession(ctx context.Context, id string, openBefore, mergedBefore, now time.Time) (Session, bool, error) {
	var ss Session
	var dropped bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM upload_sessions WHERE id = ? AND `+idle, id, openBefore.UnixNano(), mergedBefore.UnixNano()).Scan(&n); err != nil || n == 0 {
			return err
		}
		var err error
		ss, dropped, err = dropTx(ctx, tx, id, now)
		return err
	})
	return ss, dropped, wrap("meta.DropIdleSession", "", err)
}

// UserSessions returns uid's open sessions, most recently touched first.
func (s *SQLStore) UserSessions(ctx context.Context, uid int64) ([]Session, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+sessionCols+` FROM upload_sessions
		WHERE user_id = ? AND state = 'open' ORDER BY touched_ns DESC, id`, uid)
	out, err := scanAll(rows, err, func(r rowScanner) (Session, error) { return scanSession(r) })
	return out, wrap("meta.UserSessions", "", err)
}

// OpenSessions returns every open session with the chunks it holds, by id.
func (s *SQLStore) OpenSessions(ctx context.Context) ([]OpenSession, error) {
	const op = "meta.OpenSessions"
	rows, err := s.r.QueryContext(ctx, `SELECT us.id, us.user_id, us.size, sc.idx, c.size
		FROM upload_sessions us LEFT JOIN session_chunks sc ON sc.session_id = us.id LEFT JOIN chunks c ON c.id = sc.chunk_id
		WHERE us.state = 'open' ORDER BY us.id, sc.idx`)
	if err != nil {
		return nil, wrap(op, "", err)
	}
	defer rows.Close()
	var out []OpenSession
	for rows.Next() {
		var id string
		var uid, size int64
		var idx, n sql.NullInt64
		if err := rows.Scan(&id, &uid, &size, &idx, &n); err != nil {
			return nil, wrap(op, "", err)
		}
		if len(out) == 0 || out[len(out)-1].ID != id {
			out = append(out, OpenSession{ID: id, UserID: uid, Size: size})
		}
		if idx.Valid {
			last := &out[len(out)-1]
			last.Held = append(last.Held, idx.Int64)
			last.Received += n.Int64
		}
	}
	return out, wrap(op, "", rows.Err())
}

// CountOpenSessions counts the open sessions (meta.Sessions).
func (s *SQLStore) CountOpenSessions(ctx context.Context) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM upload_sessions WHERE state = 'open'`).Scan(&n)
	return n, wrap("meta.CountOpenSessions", "", err)
}

// PutChallenge stores ch for session id, replacing any challenge at the same
// index. A missing session is Other (a foreign key).
func (s *SQLStore) PutChallenge(ctx context.Context, id string, ch Challenge) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO upload_challenges(session_id, idx, nonce, proof, target, expires_ns) VALUES (?,?,?,?,?,?)
		ON CONFLICT(session_id, idx) DO UPDATE SET nonce = excluded.nonce, proof = excluded.proof, target = excluded.target, expires_ns = excluded.expires_ns`,
		id, ch.Index, ch.Nonce, ch.Proof, ch.Target, ch.Expires.UnixNano())
	return wrap("meta.PutChallenge", "", err)
}

// TakeChallenge removes and returns the challenge of session id at idx
// (single use: it is gone whatever the caller decides), and whether there
// was one. Expiry is the caller's to check.
func (s *SQLStore) TakeChallenge(ctx context.Context, id string, idx int64) (Challenge, bool, error) {
	ch := Challenge{Index: idx}
	found := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var expires int64
		err := tx.QueryRowContext(ctx, `SELECT nonce, proof, target, expires_ns FROM upload_challenges WHERE session_id = ? AND idx = ?`,
			id, idx).Scan(&ch.Nonce, &ch.Proof, &ch.Target, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found, ch.Expires = true, time.Unix(0, expires)
		_, err = tx.ExecContext(ctx, `DELETE FROM upload_challenges WHERE session_id = ? AND idx = ?`, id, idx)
		return err
	})
	if err != nil || !found {
		return Challenge{}, false, wrap("meta.TakeChallenge", "", err)
	}
	return ch, true, nil
}

// DeleteExpiredChallenges removes the challenges that expired before t and
// returns how many.
func (s *SQLStore) DeleteExpiredChallenges(ctx context.Context, t time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM upload_challenges WHERE expires_ns < ?`, t.UnixNano())
	if err != nil {
		return 0, wrap("meta.DeleteExpiredChallenges", "", err)
	}
	return res.RowsAffected()
}
