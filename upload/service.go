// Package upload is the server side of the chunked upload protocol
// (shared/API.md, seeds 001 and 004): resumable sessions, verified chunks,
// instant upload (秒传) with a proof of ownership, an idempotent atomic
// merge, and a janitor that expires idle sessions. It is the protocol only:
// it validates what the client sends (hashes, indexes, lengths; it reads a
// chunk's body and hashes it), decides what instant upload reveals and
// which sessions expired, and reads the session rows from the metadata store
// (Store). It speaks no HTTP (package api adapts it) and no SQL, and changes
// nothing itself: opening a session, storing and recording a chunk, merging
// and dropping are calls down into the drive (drive/sessions.go), which runs
// the chunk store, the quota ledger and the metadata store in the one order
// written there.
//
// A session's chunks are referenced from its rows, so garbage collection
// (drive.GC) keeps them until the session merges, is abandoned or expires.
//
// Files: service.go (wiring, sessions), init.go (init, get, abort),
// chunk.go (chunks and patchHash), reveal.go (when others' content is
// instant), proof.go (challenges), merge.go, janitor.go (expiry).
package upload

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"netdisk/chunker"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/internal/zero"
	"netdisk/meta"
)

// Defaults for Config's zero values.
const (
	DefaultTTL             = 72 * time.Hour
	DefaultMergedRetention = 24 * time.Hour
	DefaultChallengeTTL    = 5 * time.Minute
)

// Store is what the protocol reads from the metadata store (meta.Sessions
// and meta.Tree say what each method does), and the proof challenges it
// keeps there. Every change the quota ledger counts (a session opened, a
// chunk recorded, a merge, a drop) goes through the drive instead.
type Store interface {
	ResumeSession(ctx context.Context, uid int64, path string, size int64, fileHash string, notBefore, now time.Time) (string, error)
	Session(ctx context.Context, uid int64, id string) (meta.Session, error)
	UserSessions(ctx context.Context, uid int64) ([]meta.Session, error)
	SessionChunks(ctx context.Context, id string) ([]meta.SessionChunk, error)
	SessionChunkAt(ctx context.Context, id string, idx int64) (meta.Chunk, bool, error)
	IdleSessions(ctx context.Context, openBefore, mergedBefore time.Time, limit int) ([]string, error)
	ChunksHeld(ctx context.Context, uid int64, md5 string, size int64, limit int) ([]meta.HeldChunk, error)
	FileHeld(ctx context.Context, uid int64, fileHash string, size int64, limit int) (nodeID int64, h meta.Holders, found bool, err error)
	OwnFileWithContent(ctx context.Context, uid int64, fileHash string, size int64, fileSHA string) (nodeID int64, found bool, err error)
	FileChunks(ctx context.Context, nodeID int64) ([]meta.FileChunk, error)
	PutChallenge(ctx context.Context, id string, ch meta.Challenge) error
	TakeChallenge(ctx context.Context, id string, idx int64) (meta.Challenge, bool, error)
	DeleteExpiredChallenges(ctx context.Context, t time.Time) (int64, error)
}

var _ Store = meta.Store(nil)

// Config wires a Service.
type Config struct {
	Drive *drive.Drive
	DB    Store // the drive's metadata store, where the session rows live
	// TTL: sessions idle longer expire (their held bytes are released).
	TTL time.Duration
	// MergedRetention: how long a merged session is kept so a retried merge
	// (lost response) gets the same answer.
	MergedRetention time.Duration
	// ChallengeTTL bounds how long a proof-of-ownership challenge may be answered.
	ChallengeTTL time.Duration
	// Instant says when content only other users hold is instant (reveal.go;
	// the zero value is InstantPrivate with the default owner range).
	Instant Instant
	Now     func() time.Time // nil means the drive's clock
	Logger  *slog.Logger
}

// Service runs upload sessions.
type Service struct {
	d     *drive.Drive
	db    Store
	ttl   time.Duration
	keep  time.Duration
	chTTL time.Duration
	inst  Instant
	now   func() time.Time
	log   *slog.Logger

	// stripes serialise merge, prove and abort of one session, so a retried
	// merge racing the first one commits once and answers the same.
	stripes [64]sync.Mutex
}

// New returns a Service.
func New(c Config) *Service {
	s := &Service{d: c.Drive, db: c.DB, ttl: c.TTL, keep: c.MergedRetention,
		chTTL: c.ChallengeTTL, now: c.Now, log: c.Logger}
	inst, err := c.Instant.withDefaults()
	if err != nil {
		panic(err) // the daemon parses its flags with ParseInstantMode and ParseOwnerRange
	}
	s.inst = inst
	zero.OrDefault(&s.ttl, DefaultTTL)
	zero.OrDefault(&s.keep, DefaultMergedRetention)
	zero.OrDefault(&s.chTTL, DefaultChallengeTTL)
	if s.now == nil {
		s.now = c.Drive.Now
	}
	s.log = zero.Logger(s.log)
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
	Path        string // where the session commits (the caller's own path)
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

// session is a session row with the protocol's arithmetic.
type session struct{ meta.Session }

func (ss session) total() int64 { return chunker.ChunkCount(ss.Size, ss.ChunkSize) }

func (ss session) result() Result {
	return Result{Path: ss.Path, Size: ss.Size, FileHash: ss.ResultHash}
}

func (ss session) open() bool { return ss.State == meta.SessionOpen }

func errUnknown(op string) error {
	return errs.E(op, errs.NotFound, "", errors.New("unknown or expired upload session"))
}

func errMerged(op string) error {
	return errs.Errorf(op, errs.Conflict, "the session is already merged")
}

// errAlreadyReceived refuses other content for a chunk index the session
// already holds.
func errAlreadyReceived(op string, index int64) error {
	return errs.Errorf(op, errs.Conflict, "chunk %d was already received with other bytes", index)
}

// sessionErr is what a change of session ss (by the drive) answers when the
// session went away (expired or aborted: its rows and its reservation are
// gone), merged, or holds another chunk at index meanwhile.
func sessionErr(op string, index int64, err error) error {
	switch {
	case errors.Is(err, meta.ErrNoSession):
		return errUnknown(op)
	case errors.Is(err, meta.ErrSessionClosed):
		return errMerged(op)
	case errors.Is(err, meta.ErrIndexTaken):
		return errAlreadyReceived(op, index)
	}
	return err
}

// gone reports a chunk the service meant to reuse that vanished (GC) before
// it was pinned: the client then sends the bytes.
func gone(err error) bool { return errors.Is(err, meta.ErrChunkGone) }

// load returns the caller's session. Someone else's id is answered exactly as
// an unknown one, so ids cannot be probed; an open session past its TTL is
// gone even before the janitor deletes it.
func (s *Service) load(ctx context.Context, op string, uid int64, id string) (session, error) {
	if !chunker.ValidHash(id) { // newID's 16 bytes in hex have a hash's shape
		return session{}, errUnknown(op)
	}
	ms, err := s.db.Session(ctx, uid, id)
	if errors.Is(err, meta.ErrNoSession) {
		return session{}, errUnknown(op)
	}
	if err != nil {
		return session{}, err
	}
	ss := session{ms}
	if ss.open() && s.expired(ss.Touched) {
		return session{}, errUnknown(op)
	}
	return ss, nil
}

func (s *Service) expired(touched time.Time) bool {
	return touched.Before(s.now().Add(-s.ttl))
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
