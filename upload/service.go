// Package upload is the server side of the chunked upload protocol
// (shared/API.md, seeds 001 and 004): resumable sessions whose received chunks
// live in SQLite beside the tree, verified chunks, instant upload (秒传) with a
// proof of ownership, an idempotent atomic merge, and a janitor that expires
// idle sessions. It speaks no HTTP: package api adapts it.
//
// A session's chunks are referenced from session_chunks, so garbage
// collection (drive.GC) keeps them until the session merges, is abandoned or
// expires. A chunk is recorded only after its blob is durable, under a pin so
// GC cannot remove it between the store and the record.
package upload

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"netdisk/chunker"
	"netdisk/dedup"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// Defaults for Config's zero values.
const (
	DefaultTTL             = 72 * time.Hour
	DefaultMergedRetention = 24 * time.Hour
	DefaultChallengeTTL    = 5 * time.Minute
)

// Config wires a Service.
type Config struct {
	Drive *drive.Drive
	DB    *meta.SQLite // the drive's metadata store: sessions share its file and writer
	// Accountant counts space in the quota ledger (required; see
	// LedgerAccountant).
	Accountant Accountant
	// TTL: sessions idle longer expire (their held bytes are released).
	TTL time.Duration
	// MergedRetention: how long a merged session is kept so a retried merge
	// (lost response) gets the same answer.
	MergedRetention time.Duration
	// ChallengeTTL bounds how long a proof-of-ownership challenge may be answered.
	ChallengeTTL time.Duration
	Now          func() time.Time // nil means the drive's clock
	Logger       *slog.Logger
}

// Service runs upload sessions.
type Service struct {
	d     *drive.Drive
	db    *meta.SQLite
	acct  Accountant
	ttl   time.Duration
	keep  time.Duration
	chTTL time.Duration
	now   func() time.Time
	log   *slog.Logger

	// stripes serialise merge, prove and abort of one session, so a retried
	// merge racing the first one commits once and answers the same.
	stripes [64]sync.Mutex
}

// New returns a Service.
func New(c Config) *Service {
	s := &Service{d: c.Drive, db: c.DB, acct: c.Accountant, ttl: c.TTL, keep: c.MergedRetention,
		chTTL: c.ChallengeTTL, now: c.Now, log: c.Logger}
	if s.acct == nil {
		panic("upload: Config.Accountant is required")
	}
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	if s.keep <= 0 {
		s.keep = DefaultMergedRetention
	}
	if s.chTTL <= 0 {
		s.chTTL = DefaultChallengeTTL
	}
	if s.now == nil {
		s.now = c.Drive.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s
}

// TTL is the idle time after which a session expires.
func (s *Service) TTL() time.Duration { return s.ttl }

// Info is a session as init and GET session answer it.
type Info struct {
	UploadID    string
	ChunkSize   int64
	TotalChunks int64
	Uploaded    []int64
}

// Result is a committed upload.
type Result struct {
	Path     string
	Size     int64
	FileHash string
}

// MissingError is a merge refused because chunks are missing.
type MissingError struct{ Missing []int64 }

func (e *MissingError) Error() string {
	return fmt.Sprintf("%d chunk(s) missing", len(e.Missing))
}

// session is an upload_sessions row.
type session struct {
	ID         string
	UID        int64
	Path       string
	Size       int64
	ChunkSize  int64
	FileHash   string
	State      string
	Received   int64
	Replaces   int64
	ResultHash string
	Touched    int64
}

const (
	stateOpen   = "open"
	stateMerged = "merged"
)

func (ss session) total() int64 { return chunker.ChunkCount(ss.Size, ss.ChunkSize) }

func (ss session) result() Result {
	return Result{Path: ss.Path, Size: ss.Size, FileHash: ss.ResultHash}
}

const sessionCols = `id, user_id, path, size, chunk_size, file_hash, state, received, replaces, result_hash, touched_ns`

type querier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}

func scanSession(row interface{ Scan(...any) error }) (session, error) {
	var ss session
	err := row.Scan(&ss.ID, &ss.UID, &ss.Path, &ss.Size, &ss.ChunkSize, &ss.FileHash, &ss.State,
		&ss.Received, &ss.Replaces, &ss.ResultHash, &ss.Touched)
	return ss, err
}

func validHash(h string) bool {
	if len(h) != 32 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func errUnknown(op string) error {
	return errs.E(op, errs.NotFound, "", errors.New("unknown or expired upload session"))
}

// load returns the caller's session. Someone else's id is answered exactly as
// an unknown one, so ids cannot be probed; an open session past its TTL is
// gone even before the janitor deletes it.
func (s *Service) load(ctx context.Context, q querier, op string, uid int64, id string) (session, error) {
	if !validHash(id) {
		return session{}, errUnknown(op)
	}
	ss, err := scanSession(q.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM upload_sessions WHERE id = ? AND user_id = ?`, id, uid))
	if errors.Is(err, sql.ErrNoRows) {
		return session{}, errUnknown(op)
	}
	if err != nil {
		return session{}, errs.E(op, errs.Other, "", err)
	}
	if ss.State == stateOpen && s.expired(ss.Touched) {
		return session{}, errUnknown(op)
	}
	return ss, nil
}

func (s *Service) expired(touched int64) bool {
	return touched < s.now().Add(-s.ttl).UnixNano()
}

func (s *Service) stripe(id string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(id))
	return &s.stripes[h.Sum32()%uint32(len(s.stripes))]
}

func newID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Init starts a session for path, or resumes the open one with the same path
// and size (and file hash, when given).
func (s *Service) Init(ctx context.Context, uid int64, path string, size int64, fileHash string) (Info, error) {
	const op = "upload.Init"
	p, err := vpath.Clean(path)
	if err != nil {
		return Info{}, errs.E(op, errs.Invalid, path, err)
	}
	if size < 0 {
		return Info{}, errs.Errorf(op, errs.Invalid, "negative size")
	}
	if err := s.d.CheckFileSize(op, p, size); err != nil {
		return Info{}, err
	}
	if fileHash != "" && !validHash(fileHash) {
		return Info{}, errs.Errorf(op, errs.Invalid, "fileHash must be 32 lowercase hex digits")
	}
	replaces, err := s.checkTarget(ctx, op, uid, p)
	if err != nil {
		return Info{}, err
	}
	// A WebDAV lock on the path refuses the upload before any byte is
	// sent; commit checks again.
	if err := s.d.CheckWrite(ctx, uid, p); err != nil {
		return Info{}, err
	}
	// resume touches the open session with the same path and size, if any.
	resume := func(tx *sql.Tx) (string, error) {
		var id string
		err := tx.QueryRowContext(ctx, `SELECT id FROM upload_sessions WHERE user_id = ? AND path = ? AND size = ? AND state = 'open'
			AND touched_ns >= ? AND (? = '' OR file_hash IN ('', ?)) ORDER BY touched_ns DESC LIMIT 1`,
			uid, p, size, s.now().Add(-s.ttl).UnixNano(), fileHash, fileHash).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		_, err = tx.ExecContext(ctx, `UPDATE upload_sessions SET touched_ns = ?, file_hash = CASE WHEN ? = '' THEN file_hash ELSE ? END WHERE id = ?`,
			s.now().UnixNano(), fileHash, fileHash, id)
		return id, err
	}
	var id string
	if err := s.db.Tx(ctx, func(tx *sql.Tx) (err error) { id, err = resume(tx); return err }); err != nil {
		return Info{}, wrap(op, p, err)
	}
	if id == "" {
		// A new session: the ledger admits its declared size (atomically
		// against every other session of the user) before the row exists.
		done := s.acct.Step()
		id = newID()
		if err := s.acct.Reserve(ctx, uid, id, size); err != nil {
			done()
			return Info{}, wrap(op, p, err)
		}
		var other string
		err := s.db.Tx(ctx, func(tx *sql.Tx) error {
			var err error
			if other, err = resume(tx); err != nil || other != "" {
				return err // a concurrent init created it meanwhile
			}
			now := s.now().UnixNano()
			_, err = tx.ExecContext(ctx, `INSERT INTO upload_sessions(id, user_id, path, size, chunk_size, file_hash, replaces, created_ns, touched_ns)
			VALUES (?,?,?,?,?,?,?,?,?)`, id, uid, p, size, s.d.ChunkSize(), fileHash, replaces, now, now)
			return err
		})
		if err != nil || other != "" {
			s.acct.Released(context.WithoutCancel(ctx), uid, id)
			id = other
		}
		done()
		if err != nil {
			return Info{}, wrap(op, p, err)
		}
	}
	return s.Get(ctx, uid, id)
}

// checkTarget refuses a path that is (or lies under) a file where a directory
// is needed, and returns the size of the file the upload would replace.
// Missing parents are fine: merge creates them.
func (s *Service) checkTarget(ctx context.Context, op string, uid int64, p string) (int64, error) {
	if p == "/" {
		return 0, errs.E(op, errs.IsDir, p, nil)
	}
	var replaces int64
	n, err := s.d.Meta().Stat(ctx, uid, p)
	switch {
	case err == nil && n.IsDir:
		return 0, errs.E(op, errs.IsDir, p, nil)
	case err == nil:
		replaces = n.Size
	case !errs.Is(err, errs.NotFound):
		return 0, err
	}
	for dir := vpath.Parent(p); dir != ""; dir = vpath.Parent(dir) {
		n, err := s.d.Meta().Stat(ctx, uid, dir)
		if errs.Is(err, errs.NotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if !n.IsDir {
			return 0, errs.E(op, errs.NotDir, p, fmt.Errorf("%s is a file", dir))
		}
		break
	}
	return replaces, nil
}

// Get returns a session as init answers it.
func (s *Service) Get(ctx context.Context, uid int64, id string) (Info, error) {
	const op = "upload.Session"
	ss, err := s.load(ctx, s.db.ReadDB(), op, uid, id)
	if err != nil {
		return Info{}, err
	}
	rows, err := s.db.ReadDB().QueryContext(ctx, `SELECT idx FROM session_chunks WHERE session_id = ? ORDER BY idx`, ss.ID)
	if err != nil {
		return Info{}, wrap(op, "", err)
	}
	defer rows.Close()
	info := Info{UploadID: ss.ID, ChunkSize: ss.ChunkSize, TotalChunks: ss.total(), Uploaded: []int64{}}
	for rows.Next() {
		var i int64
		if err := rows.Scan(&i); err != nil {
			return Info{}, wrap(op, "", err)
		}
		info.Uploaded = append(info.Uploaded, i)
	}
	return info, wrap(op, "", rows.Err())
}

// Abort abandons a session: its held bytes are released and its chunks become
// garbage unless something else references them.
func (s *Service) Abort(ctx context.Context, uid int64, id string) error {
	const op = "upload.Abort"
	mu := s.stripe(id)
	mu.Lock()
	defer mu.Unlock()
	if _, err := s.load(ctx, s.db.ReadDB(), op, uid, id); err != nil {
		return err
	}
	return wrap(op, "", s.dropStep(ctx, id, nil))
}

// dropStep drops a session in one transaction and Step; check, if set, runs
// first in the transaction and may veto (false) the drop.
func (s *Service) dropStep(ctx context.Context, id string, check func(tx *sql.Tx) (bool, error)) error {
	defer s.acct.Step()()
	var open bool
	var uid int64
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		if check != nil {
			if ok, err := check(tx); err != nil || !ok {
				return err
			}
		}
		var err error
		open, uid, err = s.drop(ctx, tx, id)
		return err
	})
	if err == nil && open {
		s.acct.Released(context.WithoutCancel(ctx), uid, id)
	}
	return err
}

// drop deletes a session row (its chunks and challenges cascade) and settles
// what an open one flushed to SQLite; the caller releases the ledger's
// reservation after the commit when open is true.
func (s *Service) drop(ctx context.Context, tx *sql.Tx, id string) (open bool, uid int64, err error) {
	ss, err := scanSession(tx.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM upload_sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM upload_sessions WHERE id = ?`, id); err != nil {
		return false, 0, err
	}
	if ss.State != stateOpen {
		return false, 0, nil
	}
	return true, ss.UID, s.acct.Settle(ctx, tx, ss.UID, ss.ID)
}

// errGone: a chunk the service meant to reuse vanished (GC) before it was pinned.
var errGone = errors.New("chunk no longer stored")

// record makes c the chunk at idx of an open session, counting its bytes when
// the index was not held yet. With c.ID set, c must still exist (the caller
// pins it); otherwise the chunk row is found or inserted by SHA-256 (the
// caller has stored and pinned the blob).
func (s *Service) record(ctx context.Context, ss session, idx int64, c meta.Chunk) error {
	// The ledger counts the chunk first (idempotent per index; it refuses
	// a session it no longer knows), then SQLite records it, in one Step.
	defer s.acct.Step()()
	if err := s.acct.Chunk(ctx, ss.UID, ss.ID, idx, c.Size); err != nil {
		if errs.Is(err, errs.NotFound) {
			return errUnknown("upload.Chunk")
		}
		return err
	}
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		var state string
		err := tx.QueryRowContext(ctx, `SELECT state FROM upload_sessions WHERE id = ?`, ss.ID).Scan(&state)
		if errors.Is(err, sql.ErrNoRows) {
			return errUnknown("upload.Chunk")
		}
		if err != nil {
			return err
		}
		if state != stateOpen {
			return errs.Errorf("upload.Chunk", errs.Conflict, "the session is already merged")
		}
		now := s.now().UnixNano()
		id := c.ID
		if id == 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO chunks(sha256, md5, size, created_ns) VALUES (?,?,?,?) ON CONFLICT(sha256) DO NOTHING`,
				c.SHA256, c.MD5, c.Size, now); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, `SELECT id FROM chunks WHERE sha256 = ?`, c.SHA256).Scan(&id); err != nil {
				return err
			}
		} else {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM chunks WHERE id = ? AND sha256 = ?`, c.ID, c.SHA256).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return errGone
			}
			if err != nil {
				return err
			}
		}
		var prev sql.NullInt64
		err = tx.QueryRowContext(ctx, `SELECT chunk_id FROM session_chunks WHERE session_id = ? AND idx = ?`, ss.ID, idx).Scan(&prev)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if prev.Valid && prev.Int64 == id {
			return nil
		}
		if prev.Valid {
			// Checked here again, in the transaction: two different bodies
			// for one index racing each other, the first one wins.
			return errAlreadyReceived("upload.Chunk", idx)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO session_chunks(session_id, idx, chunk_id) VALUES (?,?,?)`, ss.ID, idx, id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE upload_sessions SET received = received + ?, touched_ns = ? WHERE id = ?`, c.Size, now, ss.ID)
		return err
	})
}

// heldAt returns the chunk recorded at idx of a session, if any.
func (s *Service) heldAt(ctx context.Context, id string, idx int64) (meta.Chunk, bool, error) {
	var c meta.Chunk
	err := s.db.ReadDB().QueryRowContext(ctx, `SELECT c.id, c.sha256, c.md5, c.size FROM session_chunks sc JOIN chunks c ON c.id = sc.chunk_id
		WHERE sc.session_id = ? AND sc.idx = ?`, id, idx).Scan(&c.ID, &c.SHA256, &c.MD5, &c.Size)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, err
}

// sessionChunks returns a session's chunks by index.
func (s *Service) sessionChunks(ctx context.Context, id string) (map[int64]meta.Chunk, error) {
	rows, err := s.db.ReadDB().QueryContext(ctx, `SELECT sc.idx, c.id, c.sha256, c.md5, c.size FROM session_chunks sc
		JOIN chunks c ON c.id = sc.chunk_id WHERE sc.session_id = ?`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]meta.Chunk{}
	for rows.Next() {
		var i int64
		var c meta.Chunk
		if err := rows.Scan(&i, &c.ID, &c.SHA256, &c.MD5, &c.Size); err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, rows.Err()
}

// Merge commits a session whose chunks are all present and whose recomputed
// file hash equals fileHash. A retried merge of a merged session answers the
// same result.
func (s *Service) Merge(ctx context.Context, uid int64, id, fileHash string) (Result, error) {
	const op = "upload.Merge"
	if !validHash(fileHash) {
		return Result{}, errs.Errorf(op, errs.Invalid, "fileHash must be 32 lowercase hex digits")
	}
	mu := s.stripe(id)
	mu.Lock()
	defer mu.Unlock()
	ss, err := s.load(ctx, s.db.ReadDB(), op, uid, id)
	if err != nil {
		return Result{}, err
	}
	if ss.State == stateMerged {
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
	held, err := s.sessionChunks(ctx, ss.ID)
	if err != nil {
		return Result{}, wrap(op, ss.Path, err)
	}
	total := ss.total()
	missing := []int64{}
	chunks := make([]meta.Chunk, 0, total)
	for i := int64(0); i < total; i++ {
		c, ok := held[i]
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
	return s.commit(ctx, ss, chunks, fileHash)
}

// commit makes chunks the file at the session's path and marks the session
// merged. The chunks are pinned and re-checked first, so GC cannot take one
// between the check and the commit. The tree commit is one transaction; if
// the process dies before the session is marked merged, a retried merge
// commits the same content again and settles then.
func (s *Service) commit(ctx context.Context, ss session, chunks []meta.Chunk, fileHash string) (Result, error) {
	const op = "upload.Merge"
	pins := s.d.Pins()
	for _, c := range chunks {
		pins.Pin(dedup.Key(c.SHA256))
	}
	defer func() {
		for _, c := range chunks {
			pins.Unpin(dedup.Key(c.SHA256))
		}
	}()
	for _, c := range chunks {
		got, err := s.d.Meta().ChunkBySHA256(ctx, c.SHA256)
		if errs.Is(err, errs.NotFound) || err == nil && got.ID != c.ID {
			return Result{}, errGone
		}
		if err != nil {
			return Result{}, err
		}
	}
	// Once every byte is here the commit must not be cut short by a client
	// hanging up.
	ctx = context.WithoutCancel(ctx)
	// The WebDAV lock table binds uploads too: the request must carry the
	// tokens of the locks on the path (drive.CheckWrite).
	if err := s.d.CheckWrite(ctx, ss.UID, ss.Path); err != nil {
		return Result{}, err
	}
	if parent := vpath.Parent(ss.Path); parent != "/" {
		if err := s.d.MkdirAll(ctx, ss.UID, parent); err != nil {
			return Result{}, err
		}
	}
	// One transaction commits the file, settles the session's flushed bytes
	// and closes it; the ledger turns the reservation into finished bytes
	// after, in the same Step. The growth is bounded by the declared size
	// the session reserved.
	f := meta.NewFile{Size: ss.Size, FileHash: fileHash, Chunks: chunks, ModTime: s.d.Now()}
	done := s.acct.Step()
	defer done()
	var growth int64
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var state string
		err := tx.QueryRowContext(ctx, `SELECT state FROM upload_sessions WHERE id = ?`, ss.ID).Scan(&state)
		if errors.Is(err, sql.ErrNoRows) || err == nil && state != stateOpen {
			return errUnknown(op) // expired or aborted meanwhile: its reservation is gone
		}
		if err != nil {
			return err
		}
		if _, growth, err = s.db.CommitFileTx(ctx, tx, ss.UID, ss.Path, f, ss.Size); err != nil {
			return err
		}
		if err := s.acct.Settle(ctx, tx, ss.UID, ss.ID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE upload_sessions SET state = 'merged', received = 0, result_hash = ?, touched_ns = ? WHERE id = ?`,
			fileHash, s.now().UnixNano(), ss.ID)
		return err
	})
	if err != nil {
		return Result{}, wrap(op, ss.Path, drive.DiskFull(op, err))
	}
	s.acct.Merged(ctx, ss.UID, ss.ID, growth)
	s.d.KickChecksums() // a merged file's content checksums come from the background pass
	ss.ResultHash = fileHash
	return ss.result(), nil
}

// wrap gives a plain error an op; errors with a kind keep it.
func wrap(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	return errs.E(op, errs.Other, path, err)
}
