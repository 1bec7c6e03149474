package meta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"netdisk/errs"
	"netdisk/internal/crashpoint"
)

// Group commit: concurrent write transactions share one COMMIT, and so one
// WAL fsync. With synchronous=FULL every commit waits for the disk; eight
// small uploads arriving together would otherwise wait for eight fsyncs in
// a row on the single writer. There is no timer: the first caller finds no
// batch running and runs its own at once (a lone connection never waits);
// callers arriving while a batch commits queue, and the next batch takes
// them all.
//
// Each member runs inside a SAVEPOINT of the shared transaction, so a member
// whose fn fails is rolled back alone and the others still commit; a member
// learns its outcome only after the COMMIT, so nothing is acknowledged before
// it is durable. When the COMMIT itself (or the transaction) fails, every
// member of the batch gets the error: none of their changes is kept.

// maxGroup bounds a batch, so a steady stream of writers cannot keep one
// transaction (and its members' waits) open without end.
const maxGroup = 64

type groupMember struct {
	ctx  context.Context
	fn   func(*sql.Tx) error
	done chan error    // the outcome, after the commit
	lead chan struct{} // this member is to commit the next batch
}

type groupCommit struct {
	mu      sync.Mutex
	queue   []*groupMember
	running bool // a leader is committing; false only with an empty queue
}

// GroupTx runs fn in a write transaction like Tx, possibly sharing the
// transaction and its commit with concurrent GroupTx calls (see above).
// Calling it is the choice to share: ctx must not be cancellable
// (context.WithoutCancel), since a statement interrupted by a cancelled
// context can roll back the whole shared transaction; a cancellable ctx is
// Invalid and runs nothing (a caller that may be cancelled uses Tx).
//
// Each batch is committed by its first member, which then hands the next
// batch to the first caller queued meanwhile: no caller commits for others
// longer than its own batch (callers may hold locks, e.g. a quota Step).
func (s *SQLStore) GroupTx(ctx context.Context, fn func(*Tx) error) error {
	if ctx.Done() != nil {
		return errs.E("meta.Tx", errs.Invalid, "", errors.New("group commit needs a context that cannot be cancelled"))
	}
	s.writing.Add(1) // queued writers keep reads off the writer (reader)
	defer s.writing.Add(-1)
	m := &groupMember{ctx: ctx, fn: func(tx *sql.Tx) error { return fn(&Tx{tx}) }, done: make(chan error, 1), lead: make(chan struct{}, 1)}
	g := &s.group
	g.mu.Lock()
	g.queue = append(g.queue, m)
	lead := !g.running
	g.running = true
	g.mu.Unlock()
	if !lead {
		select {
		case err := <-m.done:
			return wrap("meta.Tx", "", err)
		case <-m.lead:
		}
	}
	s.leadGroup()
	return wrap("meta.Tx", "", <-m.done)
}

// leadGroup commits the batch at the head of the queue (its caller is the
// head) and passes the lead on.
func (s *SQLStore) leadGroup() {
	g := &s.group
	g.mu.Lock()
	n := min(len(g.queue), maxGroup)
	batch := g.queue[:n:n]
	g.queue = g.queue[n:]
	g.mu.Unlock()
	s.runGroup(batch)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.running = false
		return
	}
	g.queue[0].lead <- struct{}{}
}

// runGroup runs one batch in one transaction and tells each member how it
// ended.
func (s *SQLStore) runGroup(batch []*groupMember) {
	if len(batch) == 1 {
		m := batch[0]
		m.done <- s.tx(m.ctx, m.fn)
		return
	}
	writeTxs.Add(1)
	results := make([]error, len(batch))
	fail := func(err error) {
		for _, m := range batch {
			m.done <- err
		}
	}
	tx, err := s.w.BeginTx(context.Background(), nil)
	if err != nil {
		fail(fmt.Errorf("meta: begin: %w", err))
		return
	}
	for i, m := range batch {
		if _, err := tx.ExecContext(m.ctx, `SAVEPOINT member`); err != nil {
			tx.Rollback()
			fail(fmt.Errorf("meta: savepoint: %w", err))
			return
		}
		if results[i] = m.fn(tx); results[i] != nil {
			// ROLLBACK TO keeps the savepoint open; RELEASE closes it. If
			// the failure ended the whole transaction (an I/O error, a full
			// disk), this fails and so does the batch.
			if _, err := tx.ExecContext(m.ctx, `ROLLBACK TO member`); err != nil {
				tx.Rollback()
				fail(fmt.Errorf("meta: rollback to savepoint: %w (after %w)", err, results[i]))
				return
			}
		}
		if _, err := tx.ExecContext(m.ctx, `RELEASE member`); err != nil {
			tx.Rollback()
			fail(fmt.Errorf("meta: release savepoint: %w", err))
			return
		}
	}
	if err := tx.Commit(); err != nil {
		fail(fmt.Errorf("meta: commit: %w", err))
		return
	}
	crashpoint.Synced()
	for i, m := range batch {
		m.done <- results[i]
	}
}
