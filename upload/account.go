package upload

import (
	"context"
	"fmt"

	"netdisk/quota"
)

// Accountant is where sessions report space: the quota ledger (package
// quota, seed 001), through LedgerAccountant. The call order is the ledger's
// (quota.go, "Integration"):
//
//	init:   Step { Reserve(id, size); insert the row }
//	chunk:  Step { Chunk(id, idx, n); record the chunk }
//	merge:  Step { tx{ commit the file; settle; mark merged }; Merged(growth) }
//	abort, expiry: Step { tx{ settle; delete the row }; Released }
//
// The settlement of the upload's flushed bytes is the metadata store's, in
// the transaction that closes the session (meta.MergeSession, DropSession).
//
// A session reserves its whole declared size (its chunks sit beside the
// file it replaces until the merge); the replaced file's bytes come back when
// the merge commits.
type Accountant interface {
	// Step brackets one SQLite change and its ledger calls (quota.Guard.Step).
	Step() (done func())
	// Reserve admits a new session: errs.Quota (507) when it cannot fit,
	// errs.Unavailable (503) when the ledger cannot answer.
	Reserve(ctx context.Context, uid int64, session string, declared int64) error
	// Chunk counts chunk idx of n bytes, before the record commits; a
	// repeated index counts once.
	Chunk(ctx context.Context, uid int64, session string, idx, n int64) error
	// Merged and Released run after the transaction that closed the session
	// committed: the merge moved the user's finished bytes by growth.
	Merged(ctx context.Context, uid int64, session string, growth int64)
	Released(ctx context.Context, uid int64, session string)
}

// LedgerAccountant is the Accountant on a quota.Guard.
type LedgerAccountant struct{ G *quota.Guard }

var _ Accountant = LedgerAccountant{}

func (a LedgerAccountant) Step() func() { return a.G.Step() }

func (a LedgerAccountant) Reserve(ctx context.Context, uid int64, session string, declared int64) error {
	_, err := a.G.Ledger().Reserve(ctx, uid, session, declared)
	return err
}

func (a LedgerAccountant) Chunk(ctx context.Context, uid int64, session string, idx, n int64) error {
	return a.G.Ledger().Chunk(ctx, uid, session, int(idx), n)
}

func (a LedgerAccountant) Merged(ctx context.Context, uid int64, session string, growth int64) {
	r, err := a.G.Ledger().Commit(ctx, uid, session, max(growth, 0))
	if err == nil && !r.Found {
		err = fmt.Errorf("session %s unknown to the ledger", session)
	}
	a.G.MarkDirty("Commit", err)
	a.G.Changed(ctx, uid, min(growth, 0))
}

func (a LedgerAccountant) Released(ctx context.Context, uid int64, session string) {
	_, err := a.G.Ledger().Release(ctx, uid, session)
	a.G.MarkDirty("Release", err)
}

// OpenSessions is the ledger's truth (quota.Truth): every open session with
// its declared size and the chunks it holds.
func (s *Service) OpenSessions(ctx context.Context) ([]quota.Session, error) {
	open, err := s.db.OpenSessions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]quota.Session, len(open))
	for i, o := range open {
		out[i] = quota.Session{User: o.UserID, Upload: o.ID, Declared: o.Size, Received: o.Received}
		for _, idx := range o.Held {
			out[i].Have = append(out[i].Have, int(idx))
		}
	}
	return out, nil
}
