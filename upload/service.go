// Package upload is the server side of the chunked upload protocol
// (shared/API.md, seeds 001 and 004): resumable sessions, verified chunks,
// instant upload (秒传) with a proof of ownership, an idempotent atomic
// merge, and a janitor that expires idle sessions. It speaks no HTTP (package
// api adapts it) and no SQL: session rows live in the metadata store
// (meta.Sessions), and every step on chunk bytes, pins or the tree is an
// operation of the drive (drive/sessions.go).
//
// A session's chunks are referenced from its rows, so garbage collection
// (drive.GC) keeps them until the session merges, is abandoned or expires.
// A chunk is recorded only after its blob is durable, under a pin so GC
// cannot remove it between the store and the record (drive.StoreChunk).
//
// Files: service.go (wiring, sessions), init.go (init, get, abort),
// chunk.go (chunks and patchHash), reveal.go (when others' content is
// instant), proof.go (challenges), merge.go,
// account.go (the quota ledger), janitor.go (expiry).
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

// Config wires a Service.
type Config struct {
	Drive *drive.Drive
	DB    meta.Sessions // the drive's metadata store, where the session rows live
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
	// Instant says when content only other users hold is instant (reveal.go;
	// the zero value is InstantPrivate with the default owner range).
	Instant Instant
	Now     func() time.Time // nil means the drive's clock
	Logger  *slog.Logger
}

// Service runs upload sessions.
type Service struct {
	d     *drive.Drive
	db    meta.Sessions
	acct  Accountant
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
	s := &Service{d: c.Drive, db: c.DB, acct: c.Accountant, ttl: c.TTL, keep: c.MergedRetention,
		chTTL: c.ChallengeTTL, now: c.Now, log: c.Logger}
	if s.acct == nil {
		panic("upload: Config.Accountant is required")
	}
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
