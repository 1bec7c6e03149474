package drive

import (
	"context"

	"netdisk/errs"
	"netdisk/meta"
	"netdisk/quota"
	"netdisk/vpath"
)

// Every change of a user's files goes through the quota ledger:
// bytes that enter (Writer: WebDAV PUT and the one-request upload; Copy) are
// reserved before any is stored and refused with errs.Quota (507) when they
// do not fit; deletes, moves over a file and overwrites tell the ledger after
// their commit. Each metadata change and its ledger update form one
// quota.Guard Step. The upload sessions of the chunked API account through
// the same Guard, in the order drive/sessions.go writes down.
//
// What the ledger counts as finished is what the metadata store charges:
// the files' sizes and the metadata charge of every entry and dead property
// (meta/charge.go), so a new folder, a new file's entry and a property are
// reserved and committed like bytes.

// QuotaGuard returns the ledger guard.
func (d *Drive) QuotaGuard() *quota.Guard { return d.quota }

// measuredChange runs change in a transaction inside a Step and reports its
// effect on finished bytes to the ledger.
func (d *Drive) measuredChange(ctx context.Context, uid int64, change func(tx *meta.Tx) (int64, error)) error {
	return d.stepTx(ctx, ownCommit, change, func(delta int64) { d.quota.Changed(context.WithoutCancel(ctx), uid, delta) })
}

// stepTx runs change in a transaction inside a Step and, once it committed,
// hands how it moved the user's finished bytes to ledger, still inside the
// Step. share says whether the transaction may share its commit.
func (d *Drive) stepTx(ctx context.Context, share commitSharing, change func(tx *meta.Tx) (int64, error), ledger func(delta int64)) error {
	defer d.quota.Step()()
	var delta int64
	err := d.txFunc(share)(ctx, func(tx *meta.Tx) (err error) {
		delta, err = change(tx)
		return err
	})
	if err != nil {
		return err
	}
	ledger(delta)
	return nil
}

// copyWithHold reserves the bytes a copy adds, then copies.
func (d *Drive) copyWithHold(ctx context.Context, uid int64, src, dst string, overwrite, recursive bool) error {
	sn, err := d.meta.Stat(ctx, uid, src)
	if err != nil {
		return err
	}
	var need int64
	if !sn.IsDir || recursive {
		if need, err = d.meta.SubtreeSize(ctx, uid, src); err != nil {
			return err
		}
		// The copy's top entry is charged by its own name.
		need += int64(len(vpath.Base(dst)) - len(vpath.Base(src)))
	} else {
		// The folder alone: its entry and its properties.
		ps, err := d.meta.Props(ctx, sn.ID)
		if err != nil {
			return err
		}
		need = meta.EntryCharge(vpath.Base(dst))
		for _, p := range ps {
			need += p.Bytes()
		}
	}
	h := d.quota.NewHold(uid)
	if err := h.Grow(ctx, need); err != nil {
		return err
	}
	err = d.holdCommit(ctx, ownCommit, h, func(tx *meta.Tx) (int64, error) {
		return d.meta.CopyTx(ctx, tx, uid, src, dst, overwrite, recursive, h.Reserved())
	})
	if err != nil {
		h.Release(ctx)
	}
	return err
}

// mkdirCharged creates folder p (mode as stored, see meta.StoredMode) with
// its entry's charge reserved first.
func (d *Drive) mkdirCharged(ctx context.Context, op string, uid int64, p string, mode uint32) (meta.Node, error) {
	if err := d.room(op); err != nil {
		return meta.Node{}, err
	}
	h := d.quota.NewHold(uid)
	if err := h.Grow(ctx, meta.EntryCharge(vpath.Base(p))); err != nil {
		return meta.Node{}, err
	}
	var n meta.Node
	err := d.holdCommit(ctx, ownCommit, h, func(tx *meta.Tx) (delta int64, err error) {
		n, delta, err = d.meta.MkdirTx(ctx, tx, uid, p, d.now(), mode, h.Reserved())
		return delta, err
	})
	if err != nil {
		h.Release(ctx)
	}
	return n, d.noteFull(err)
}

// patchPropsCharged applies a PROPPATCH to node id of user uid with the
// bytes it may add reserved first.
func (d *Drive) patchPropsCharged(ctx context.Context, uid, id int64, set, remove []meta.Prop) error {
	var grow int64
	for _, p := range set {
		grow += p.Bytes()
	}
	h := d.quota.NewHold(uid)
	if err := h.Grow(ctx, grow); err != nil {
		return err
	}
	err := d.holdCommit(ctx, ownCommit, h, func(tx *meta.Tx) (int64, error) {
		return d.meta.PatchPropsTx(ctx, tx, id, set, remove, h.Reserved())
	})
	if err != nil {
		h.Release(ctx)
	}
	return d.noteFull(err)
}

// holdCommit runs change (bounded by the hold) in a transaction inside a Step
// and turns the hold into finished bytes when it commits. share says whether
// the transaction may share its commit.
func (d *Drive) holdCommit(ctx context.Context, share commitSharing, h *quota.Hold, change func(tx *meta.Tx) (int64, error)) error {
	err := d.stepTx(ctx, share, change, func(delta int64) { h.CommitInStep(context.WithoutCancel(ctx), delta) })
	return err
}

// setQuotaGuarded changes the total in SQLite, then in the ledger.
func (d *Drive) setQuotaGuarded(ctx context.Context, uid, total int64) error {
	defer d.quota.Step()()
	defer d.staleAuth()
	if err := d.meta.SetQuota(ctx, uid, total); err != nil {
		return err
	}
	d.quota.MarkDirty("SetTotal", d.quota.Ledger().SetTotal(context.WithoutCancel(ctx), uid, total))
	return nil
}

// deleteUser removes the user in SQLite (their tree, upload sessions and
// web sessions go with the row), then from the ledger, and ends their WebDAV
// locks (their tokens are worth nothing after) and, through the hooks
// (OnUserDeleted), their async downloads. The id is never given again, so
// whatever still names it can never become another user's.
func (d *Drive) deleteUser(ctx context.Context, uid int64) error {
	return d.deleteUserWith(ctx, uid, d.meta.DeleteUser)
}

// deleteUserWith is deleteUser with the metadata delete given (the plain one
// or the one that keeps an admin).
func (d *Drive) deleteUserWith(ctx context.Context, uid int64, del func(context.Context, int64) error) error {
	defer d.quota.Step()()
	defer d.staleAuth()
	if err := del(ctx, uid); err != nil {
		return err
	}
	d.quota.MarkDirty("Forget", d.quota.Ledger().Forget(context.WithoutCancel(ctx), uid))
	d.locks.Release(uid, "/")
	d.userHooksMu.Lock()
	hooks := d.userDeleted
	d.userHooksMu.Unlock()
	for _, fn := range hooks {
		// The account is gone already: a hook that fails leaves records
		// nobody can reach (the id is never given again) until they expire.
		if err := fn(context.WithoutCancel(ctx), uid); err != nil {
			d.log.Warn("deleted user: cleaning up after them", "user", uid, "err", err)
		}
	}
	return nil
}

// OnUserDeleted registers fn to end what a layer above the drive keeps for
// a user (async downloads) once the user is deleted.
func (d *Drive) OnUserDeleted(fn func(ctx context.Context, uid int64) error) {
	d.userHooksMu.Lock()
	d.userDeleted = append(d.userDeleted, fn)
	d.userHooksMu.Unlock()
}

// reserveMore grows a writer's hold to cover size bytes: by doubling steps
// (at least a chunk, at most 256 MiB) and, when a full step does not fit, by
// exactly what has arrived, so a body that fits is never refused.
func (w *Writer) reserveMore() error {
	h := w.hold
	need := w.size - h.Reserved()
	if need <= 0 {
		return nil
	}
	step := max(need, min(max(h.Reserved(), w.d.chunkSize), 256<<20))
	err := h.Grow(w.ctx, step)
	if errs.Is(err, errs.Quota) && step > need {
		err = h.Grow(w.ctx, need)
	}
	return err
}
