package quota

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"netdisk/errs"
	"netdisk/meta"
)

// SinkStore is what the sink needs of the metadata store: the users' totals
// and the flush records (meta.QuotaRecords), which the store keeps beside
// users.use_space_unfinished.
type SinkStore interface {
	ListUsers(ctx context.Context) ([]meta.User, error)
	UserByID(ctx context.Context, id int64) (meta.User, error)
	meta.QuotaRecords
}

// SQLiteSink is the Sink on netdisk's metadata store (SQLite today). The
// store settles an upload's flushes itself, in the transaction that closes
// its session (meta.MergeSession, meta.DropSession).
type SQLiteSink struct {
	db     SinkStore
	now    func() time.Time
	writes atomic.Int64 // users-table writes made by Flush (for metrics and the benchmark)
}

var _ Sink = (*SQLiteSink)(nil)

// NewSQLiteSink returns the sink on db; now stamps the records Repair settles.
func NewSQLiteSink(db SinkStore, now func() time.Time) *SQLiteSink {
	if now == nil {
		now = time.Now
	}
	return &SQLiteSink{db: db, now: now}
}

// Writes returns how many times Flush wrote the users table.
func (s *SQLiteSink) Writes() int64 { return s.writes.Load() }

// Flush applies the flushes in one transaction (meta.ApplyQuotaFlushes): for
// each, the users row is written once, and a flush whose Seq is not newer
// than the last applied one, or of a settled session, changes nothing.
func (s *SQLiteSink) Flush(ctx context.Context, fs []Flush) error {
	mf := make([]meta.QuotaFlush, len(fs))
	for i, f := range fs {
		mf[i] = meta.QuotaFlush{User: f.User, Upload: f.Upload, Seq: f.Seq, Target: f.Target}
	}
	n, err := s.db.ApplyQuotaFlushes(ctx, mf)
	if err != nil {
		return errs.E("quota.Flush", errs.Unavailable, "", err)
	}
	s.writes.Add(n)
	return nil
}

// PruneSettled deletes tombstones of sessions settled before the cutoff
// (choose it far beyond the ledger's lease: a flush claimed before the
// settlement must have landed or died by then).
func (s *SQLiteSink) PruneSettled(ctx context.Context, before time.Time) (int64, error) {
	n, err := s.db.PruneQuotaFlushes(ctx, before)
	if err != nil {
		return 0, fmt.Errorf("quota: prune: %w", err)
	}
	return n, nil
}

// Users returns every user's totals.
func (s *SQLiteSink) Users(ctx context.Context) ([]UserTotals, error) {
	us, err := s.db.ListUsers(ctx)
	if err != nil {
		return nil, errs.E("quota.Users", errs.Unavailable, "", err)
	}
	out := make([]UserTotals, len(us))
	for i, u := range us {
		out[i] = UserTotals{User: u.ID, Total: u.QuotaTotal, Finished: charged(u)}
	}
	return out, nil
}

// User returns one user's totals.
func (s *SQLiteSink) User(ctx context.Context, id int64) (UserTotals, error) {
	u, err := s.db.UserByID(ctx, id)
	if errs.Is(err, errs.NotFound) {
		return UserTotals{User: id}, errs.E("quota.User", errs.NotFound, "", err)
	}
	if err != nil {
		return UserTotals{User: id}, errs.E("quota.User", errs.Unavailable, "", err)
	}
	return UserTotals{User: id, Total: u.QuotaTotal, Finished: charged(u)}, nil
}

// charged is what the ledger counts as a user's finished bytes: their files
// and the metadata charge of their entries and properties (meta/charge.go),
// both admitted under the one total.
func charged(u meta.User) int64 { return u.Finished + u.Meta }

// Repair settles the records of uploads that are not open (their session
// ended without a settlement, e.g. a crash between the ledger and SQLite),
// sets every user's use_space_unfinished to the sum of their open records,
// and returns those records.
func (s *SQLiteSink) Repair(ctx context.Context, open map[string]bool) (map[string]FlushRecord, error) {
	recs, err := s.db.RepairQuotaFlushes(ctx, open, s.now())
	if err != nil {
		return nil, errs.E("quota.Repair", errs.Unavailable, "", err)
	}
	out := make(map[string]FlushRecord, len(recs))
	for up, r := range recs {
		out[up] = FlushRecord{Seq: r.Seq, Flushed: r.Flushed}
	}
	return out, nil
}
