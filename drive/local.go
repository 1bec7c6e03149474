package drive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"netdisk/dedup"
	"netdisk/internal/zero"
	"netdisk/meta"
	"netdisk/quota"
)

// Local is a Drive over the stores of one data directory — SQLite metadata
// (meta.db), the chunk directory (chunks/) and the quota guard over them —
// wired as `netdisk serve` runs it. The daemon (daemon.Open) and the
// in-process test drive (drive/drivetest) both open it here, so tests run
// the path production runs.
type Local struct {
	Drive *Drive
	Meta  *meta.SQLStore
	Blobs *dedup.DiskStore // nil when LocalConfig.BlobStore was given
	Quota *quota.Guard
}

// LocalConfig configures OpenLocal: the Drive's Config (its Meta, Blobs and
// Quota are built here and must be left unset), the data directory, and the
// ledger.
type LocalConfig struct {
	Config
	Dir string
	// MetaURL, when set, is a shared metadata store (postgres://…) in place
	// of meta.db in Dir.
	MetaURL string
	// BlobStore, when set, holds the chunks in place of Dir's chunk
	// directory (an S3 bucket); Local.Blobs is then nil.
	BlobStore dedup.BlobStore
	// Ledger builds the quota ledger over the sink OpenLocal made (cfg has
	// Sink, Clock and Log set); nil means the embedded ledger.
	Ledger func(cfg quota.Config) quota.Ledger
	// DiskReserve is the space kept allocated in Dir so that deletions
	// and GC can run when the disk fills (reserve.go); 0 means
	// DefaultDiskReserve. Only with meta.db in Dir: a shared store's
	// database is on its own server's disk.
	DiskReserve int64
}

// OpenLocal opens (creating on first use) the data directory and wires the
// Drive. The ledger starts empty: call Reconcile before serving.
func OpenLocal(ctx context.Context, c LocalConfig) (*Local, error) {
	if c.Meta != nil || c.Blobs != nil || c.Quota != nil {
		return nil, fmt.Errorf("drive.OpenLocal: Meta, Blobs and Quota are built from the data directory")
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	// The reserve is settled before the database opens: on a disk full to
	// the last byte, opening it may itself need the room.
	var reserve *diskReserve
	if c.MetaURL == "" {
		zero.OrDefault(&c.DiskReserve, DefaultDiskReserve)
		var err error
		if reserve, err = openReserve(c.Dir, c.DiskReserve, zero.Logger(c.Logger)); err != nil {
			return nil, err
		}
	}
	m, err := openMeta(ctx, c)
	if err != nil {
		return nil, err
	}
	var blobs *dedup.DiskStore
	var store dedup.BlobStore = c.BlobStore
	if store == nil {
		if blobs, err = dedup.NewDiskStore(filepath.Join(c.Dir, "chunks")); err != nil {
			m.Close()
			return nil, err
		}
		store = blobs
		if c.Volume == nil {
			// The history of a user without a quota shares the volume
			// the chunks are on (history.go).
			chunks := filepath.Join(c.Dir, "chunks")
			c.Volume = func() int64 { return volumeBytes(chunks) }
		}
	}
	sink := quota.NewSQLiteSink(m, c.Now)
	cfg := quota.Config{Sink: sink, Log: c.Logger}
	if c.Now != nil {
		cfg.Clock = clockFunc(c.Now)
	}
	newLedger := c.Ledger
	if newLedger == nil {
		newLedger = func(cfg quota.Config) quota.Ledger { return quota.NewMemory(cfg) }
	}
	g := quota.NewGuard(newLedger(cfg), sink, c.Logger)
	if cfg.Clock != nil {
		g.SetHoldLease(cfg.Clock, 0)
	}
	owner, err := nodeID(c.Dir)
	if err != nil {
		m.Close()
		return nil, err
	}
	g.SetOwner(owner)
	dc := c.Config
	dc.Meta, dc.Blobs, dc.Quota = m, store, g
	dc.SharedMeta = dc.SharedMeta || c.MetaURL != ""
	d := New(dc)
	d.reserve = reserve
	return &Local{Drive: d, Meta: m, Blobs: blobs, Quota: g}, nil
}

// openMeta opens meta.db in the data directory, or the shared store MetaURL
// names. Either is a meta.SQLStore (the PostgreSQL store is one over its
// own connections, meta/postgres.go), so Local.Meta has one type.
func openMeta(ctx context.Context, c LocalConfig) (*meta.SQLStore, error) {
	switch {
	case c.MetaURL == "":
		return meta.OpenSQLite(ctx, filepath.Join(c.Dir, "meta.db"), c.Now)
	case meta.IsPostgresURL(c.MetaURL):
		p, err := meta.OpenPostgres(ctx, c.MetaURL, c.Now)
		if err != nil {
			return nil, err
		}
		return p.SQLStore, nil
	default:
		return nil, fmt.Errorf("metadata store %q: want postgres://… (or none for SQLite in the data directory)", c.MetaURL)
	}
}

// Reconcile rebuilds the quota ledger from SQLite: the users' totals and
// finished bytes, and the open upload sessions truth lists (the Drive itself,
// drive/sessions.go, when the upload service runs; nil when it does not). Run
// it before serving; a ledger that was never reconciled answers
// errs.Unavailable.
func (l *Local) Reconcile(ctx context.Context, truth quota.Truth) error {
	if truth != nil {
		l.Quota.SetTruth(truth)
	}
	return l.Quota.Reconcile(ctx)
}

// Close closes the chunk store it opened (waiting for its background work)
// and the metadata store. Stop everything using the Drive first.
func (l *Local) Close() error {
	if l.Blobs != nil {
		l.Blobs.Close()
	}
	return l.Meta.Close()
}

// clockFunc adapts Config.Now to quota.Clock.
type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

// nodeID returns the data directory's node id, creating it on first use:
// the quota holds of this node carry it, so the node's next start knows the
// holds its previous process left (quota.Guard.SetOwner). Nodes never share
// a data directory.
func nodeID(dir string) (string, error) {
	p := filepath.Join(dir, "node-id")
	if b, err := os.ReadFile(p); err == nil && validNodeID(strings.TrimSpace(string(b))) {
		return strings.TrimSpace(string(b)), nil
	}
	b := make([]byte, 8)
	rand.Read(b)
	id := hex.EncodeToString(b)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("node id: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", fmt.Errorf("node id: %w", err)
	}
	return id, nil
}

func validNodeID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}
