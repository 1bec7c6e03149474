package drive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"netdisk/davlock"
	"netdisk/dedup"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/quota"
	"netdisk/vpath"
)

// The upload sessions' write path. Package upload speaks the protocol
// (validation, proofs, the reveal policy, which session expired) and reads
// the session rows; every change a session makes — to its rows, to the quota
// ledger, to chunk bytes and pins, to the tree — is a call down into this
// file, which runs it in the one order below. This is the order the quota
// ledger requires (quota.go, "Integration") and the order that keeps chunks
// safe from GC; it is written here once, where it is enforced:
//
//	open:   Step { ledger Reserve(id, declared); meta CreateSession;
//	               ledger Release(id) if the row was not created or another
//	               session was used }
//	chunk:  pin; blob Put (durable, fsynced);
//	        Step { ledger Chunk(id, idx, n); meta AddSessionChunk }; unpin
//	reuse:  pin; blob Has (gone: nothing recorded);
//	        Step { ledger Chunk(id, idx, n); meta AddSessionChunk }; unpin
//	merge:  hold the entries the merge creates (outside the Step);
//	        Step { pin the chunks, re-check their records; mkdir parents;
//	               tx { commit the file; settle; mark merged }; unpin;
//	               ledger Commit(id, growth) }; release what the hold kept
//	abort, expiry: Step { tx { settle; delete the row }; ledger Release(id) if it was open }
//
// Durable first, recorded second: a crash between the blob and the record
// leaves an orphan blob for GC, never a record without bytes; the pin keeps
// GC off the blob until the record references it. The ledger counts a chunk
// before its record commits (idempotent per index; it refuses a session it no
// longer knows) and settles a session after the transaction that closed it;
// the settlement of the upload's flushed bytes is the metadata store's, in
// that transaction (meta.MergeSession, DropSession, DropIdleSession). A
// session reserves its whole declared size: its chunks sit beside the file
// it replaces until the merge, and the replaced file's bytes come back when
// the merge commits.
//
// Errors keep the metadata store's sentinels, for the protocol to answer: a
// session gone (or unknown to the ledger) wraps meta.ErrNoSession, a merged
// one meta.ErrSessionClosed, another chunk at the index meta.ErrIndexTaken.
// A chunk that vanished (GC took it before it was pinned) is an error of kind
// NotFound wrapping meta.ErrChunkGone: instant upload then answers "send the
// bytes".

func chunkGone(op string) error { return errs.E(op, errs.NotFound, "", meta.ErrChunkGone) }

// OpenSession opens ss (its ID chosen by the caller, State open) touched at
// now, unless a session meta.Sessions.ResumeSession would find (touched at or
// after notBefore) exists: then that one is touched and used. It returns the
// id in use. The ledger admits the declared size first, atomically against
// every other session of the user (errs.Quota, errs.Unavailable), and gives
// it back when ss was not the session used.
func (d *Drive) OpenSession(ctx context.Context, ss meta.Session, notBefore, now time.Time) (string, error) {
	defer d.quota.Step()()
	if _, err := d.quota.Ledger().Reserve(ctx, ss.UserID, ss.ID, ss.Size); err != nil {
		return "", err
	}
	used, err := d.meta.CreateSession(ctx, ss, notBefore, now)
	// A taken id (a caller that derives ids, opening one again) is that
	// session's reservation, which Reserve found and left as it was.
	if err != nil && !errs.Is(err, errs.Exists) || err == nil && used != ss.ID {
		d.releaseSession(context.WithoutCancel(ctx), ss.UserID, ss.ID)
	}
	return used, err
}

// PutSessionChunk stores b, the bytes of chunk c (its SHA-256, MD5 and size
// computed by the caller from b), durably and records it as chunk idx of
// uid's open session id, touched at now, and adds b to the session's running
// content checksums (sessionsums.go; the caller notes the chunk's arrival
// with ChunkArriving first, so that a later chunk waits for it). The same chunk at the same index
// again is success; see above for the order and the errors. On success the
// store is done with b; on failure it may not be (an HTTP transport, the S3
// store, can still be reading it after its answer).
func (d *Drive) PutSessionChunk(ctx context.Context, uid int64, id string, idx int64, c meta.Chunk, b []byte, now time.Time) error {
	key := dedup.Key(c.SHA256)
	d.pins.Pin(ctx, key)
	defer d.pins.Unpin(ctx, key)
	if err := d.StoreBlob(ctx, key, b); err != nil {
		return err
	}
	if err := d.recordSessionChunk(ctx, uid, id, idx, c, now); err != nil {
		return err
	}
	d.addSessionChunk(ctx, id, idx, c.SHA256, b) // the file's checksums (sessionsums.go)
	return nil
}

// ReuseSessionChunk records the stored chunk c (c.ID set, as the metadata
// store returned it) as chunk idx of uid's open session id without its bytes
// being sent, if its blob is still there: false, with nothing recorded, when
// it is gone.
func (d *Drive) ReuseSessionChunk(ctx context.Context, uid int64, id string, idx int64, c meta.Chunk, now time.Time) (bool, error) {
	key := dedup.Key(c.SHA256)
	d.pins.Pin(ctx, key)
	defer d.pins.Unpin(ctx, key)
	if ok, err := d.blobs.Has(ctx, key); err != nil || !ok {
		return false, err
	}
	return true, d.recordSessionChunk(ctx, uid, id, idx, c, now)
}

// recordSessionChunk is the chunk's Step: the ledger counts it, then the
// metadata store records it. The caller holds the chunk's pin.
func (d *Drive) recordSessionChunk(ctx context.Context, uid int64, id string, idx int64, c meta.Chunk, now time.Time) error {
	const op = "drive.SessionChunk"
	defer d.quota.Step()()
	if err := d.quota.Ledger().Chunk(ctx, uid, id, int(idx), c.Size); err != nil {
		if errs.Is(err, errs.NotFound) {
			return errs.E(op, errs.NotFound, "", fmt.Errorf("%w: %w", meta.ErrNoSession, err))
		}
		return err
	}
	return d.meta.AddSessionChunk(ctx, id, idx, c, now)
}

// DropSession deletes session id and, when it was open, gives its
// reservation back to the ledger; dropped reports whether it existed.
func (d *Drive) DropSession(ctx context.Context, id string, now time.Time) (dropped bool, err error) {
	return d.dropStep(ctx, id, func() (meta.Session, bool, error) { return d.meta.DropSession(ctx, id, now) })
}

// DropIdleSession is DropSession of a session still idle when the metadata
// store looks (meta.Sessions.DropIdleSession): the caller decided it expired,
// a chunk that touched it meanwhile keeps it.
func (d *Drive) DropIdleSession(ctx context.Context, id string, openBefore, mergedBefore, now time.Time) (dropped bool, err error) {
	return d.dropStep(ctx, id, func() (meta.Session, bool, error) {
		return d.meta.DropIdleSession(ctx, id, openBefore, mergedBefore, now)
	})
}

// dropStep runs drop (a store call that deletes a session and settles an open
// one's quota flushes in one transaction) in a Step, and releases the ledger's
// reservation of a dropped open session after the commit.
func (d *Drive) dropStep(ctx context.Context, id string, drop func() (meta.Session, bool, error)) (bool, error) {
	defer d.quota.Step()()
	ss, dropped, err := drop()
	if err == nil && dropped {
		d.dropSessionSums(id)
	}
	if err == nil && dropped && ss.State == meta.SessionOpen {
		d.releaseSession(context.WithoutCancel(ctx), ss.UserID, ss.ID)
	}
	return dropped, err
}

// releaseSession gives a session's reservation back, inside its Step, after
// the change that ended the session: a failure leaves the ledger to
// reconcile.
func (d *Drive) releaseSession(ctx context.Context, uid int64, id string) {
	_, err := d.quota.Ledger().Release(ctx, uid, id)
	d.quota.MarkDirty("Release", err)
}

// CountOpenSessions counts the open upload sessions without reading their
// chunks.
func (d *Drive) CountOpenSessions(ctx context.Context) (int64, error) {
	return d.meta.CountOpenSessions(ctx)
}

// OpenSessions is the ledger's truth (quota.Truth): every open session with
// its declared size and the chunks it holds.
func (d *Drive) OpenSessions(ctx context.Context) ([]quota.Session, error) {
	open, err := d.meta.OpenSessions(ctx)
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

var _ quota.Truth = (*Drive)(nil)

// FileChunks returns the chunks of file version n (from Stat) in order.
func (d *Drive) FileChunks(ctx context.Context, n meta.Node) ([]meta.FileChunk, error) {
	return d.meta.FileChunks(ctx, n.ID)
}

// NodeProps returns the dead properties of node n (from Stat).
func (d *Drive) NodeProps(ctx context.Context, n meta.Node) ([]meta.Prop, error) {
	return d.meta.Props(ctx, n.ID)
}

// ReadContent reads n bytes at off of the content made of chunks in order
// (a proof of ownership is computed over it).
func (d *Drive) ReadContent(ctx context.Context, chunks []meta.Chunk, off, n int64) ([]byte, error) {
	const op = "drive.ReadContent"
	out := make([]byte, 0, n)
	var base int64
	for _, c := range chunks {
		if n == 0 {
			break
		}
		if off >= base+c.Size {
			base += c.Size
			continue
		}
		in := off - base
		l := min(c.Size-in, n)
		f, err := d.blobs.Open(ctx, dedup.Key(c.SHA256))
		if errors.Is(err, dedup.ErrNotFound) {
			return nil, chunkGone(op)
		}
		if err != nil {
			return nil, err
		}
		buf := make([]byte, l)
		_, err = f.Seek(in, io.SeekStart)
		if err == nil {
			_, err = io.ReadFull(f, buf)
		}
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read chunk %s: %w", c.SHA256, err)
		}
		out = append(out, buf...)
		off += l
		n -= l
		base += c.Size
	}
	if n != 0 {
		return nil, chunkGone(op)
	}
	return bytes.Clone(out), nil
}

// CommitSession makes f (whose chunks are stored: the ones uid's open
// session id holds, or content a proof unlocked) the file at path and closes
// the session as merged with f.FileHash, in one transaction that also
// settles the session's quota flushes (meta.MergeSession); now stamps the
// session, f.ModTime zero means the drive's now. The entries the merge
// creates (the file's, missing folders') are held against the quota before
// its Step, like bytes; the file's growth of the user's finished bytes is
// bounded by the session's declared size (errs.Quota beyond), and the ledger
// turns the reservation into finished bytes after the commit. The chunks are
// pinned and their records re-checked first, so GC cannot take one between
// the check and the commit (gone: meta.ErrChunkGone). Missing parents are
// created; the WebDAV locks on path bind the commit as any write. Once in
// its Step the commit is not cut short by ctx: every byte has arrived. A
// session no longer open (expired or aborted meanwhile: its reservation is
// gone) is meta.ErrNoSession. If the process dies before the session is
// marked merged, a retried merge commits the same content again and settles
// then.
func (d *Drive) CommitSession(ctx context.Context, uid int64, path, id string, f meta.NewFile, now time.Time) (meta.Node, error) {
	if f.ModTime.IsZero() {
		f.ModTime = d.now()
	}
	ctx, w, err := d.resolvePath(ctx, "drive.CommitSession", uid, path, writeAccess)
	if err != nil {
		return meta.Node{}, err
	}
	if w.m != nil {
		return d.commitSessionAcross(ctx, w, uid, id, f, now)
	}
	// The content checksums the chunks gave as they arrived: all of them
	// go into the commit, a prefix to the background pass.
	partial := d.sessionChecksums(id, &f)
	// Reserved before the Step, committed in it, released after it if the
	// merge failed (defers run in reverse).
	entries, err := d.reserveEntries(ctx, uid, path)
	if err != nil {
		return meta.Node{}, err
	}
	defer entries.Release(context.WithoutCancel(ctx))
	defer d.quota.Step()()
	n, growth, err := d.mergeInStep(ctx, uid, path, id, f, now, entries)
	if err != nil {
		return meta.Node{}, err
	}
	if f.MD5 == "" {
		d.keepPartial(n, partial)
		d.KickChecksums() // the rest of the content checksums come from the background pass
	}
	cctx := context.WithoutCancel(ctx)
	r, err := d.quota.Ledger().Commit(cctx, uid, id, max(growth, 0))
	if err == nil && !r.Found {
		err = fmt.Errorf("session %s unknown to the ledger", id)
	}
	d.quota.MarkDirty("Commit", err)
	d.quota.Changed(cctx, uid, min(growth, 0)) // a smaller replaced file gives bytes back
	return n, nil
}

// reserveEntries reserves what the entries a session's merge will create
// cost (the file's, if path is free, and its missing folders':
// meta/charge.go).
func (d *Drive) reserveEntries(ctx context.Context, uid int64, path string) (*quota.Hold, error) {
	var need int64
	for p := path; p != "/"; p = vpath.Parent(p) {
		_, err := d.meta.Stat(ctx, uid, p)
		if err == nil {
			break // it and everything above exist
		}
		if !errs.Is(err, errs.NotFound) {
			return nil, err
		}
		need += meta.EntryCharge(vpath.Base(p))
	}
	h := d.quota.NewHold(uid)
	if err := h.Grow(ctx, need); err != nil {
		return nil, err
	}
	return h, nil
}

// mkdirParentsInStep creates the missing folders above path inside the
// caller's quota Step (no Step of its own: Steps do not nest), and returns
// what they were charged. ctx cannot be cancelled: the folders go in with
// the session's merge, which runs to the end once begun.
func (d *Drive) mkdirParentsInStep(ctx context.Context, uid int64, path string) (int64, error) {
	var missing []string
	for p := vpath.Parent(path); p != "/" && p != ""; p = vpath.Parent(p) {
		n, err := d.meta.Stat(ctx, uid, p)
		if err == nil {
			if !n.IsDir {
				return 0, errs.E("drive.CommitSession", errs.NotDir, p, nil)
			}
			break
		}
		if !errs.Is(err, errs.NotFound) {
			return 0, err
		}
		missing = append(missing, p)
	}
	var charged int64
	for i := len(missing) - 1; i >= 0; i-- {
		p := missing[i]
		if err := d.checkLocks(ctx, uid, davlock.Target{Path: p, Membership: true}); err != nil {
			return charged, err
		}
		var delta int64
		err := d.txFunc(sharedCommit)(ctx, func(tx *meta.Tx) (err error) {
			_, delta, err = d.meta.MkdirTx(ctx, tx, uid, p, d.now(), 0, meta.NoGrowthLimit)
			return err
		})
		switch {
		case errs.Is(err, errs.Exists):
		case err != nil:
			return charged, err
		default:
			charged += delta
		}
	}
	return charged, nil
}

// mergeInStep is CommitSession's Step: it returns the node and how much the
// commit grew the user's finished bytes, and commits entries with what the
// new entries were charged.
func (d *Drive) mergeInStep(ctx context.Context, uid int64, path, id string, f meta.NewFile, now time.Time, entries *quota.Hold) (meta.Node, int64, error) {
	const op = "drive.CommitSession"
	// Not cut short by ctx (see above): the pins wait for a GC deletion.
	pctx := context.WithoutCancel(ctx)
	for _, c := range f.Chunks {
		d.pins.Pin(pctx, dedup.Key(c.SHA256))
	}
	defer func() {
		for _, c := range f.Chunks {
			d.pins.Unpin(pctx, dedup.Key(c.SHA256))
		}
	}()
	for _, c := range f.Chunks {
		got, err := d.meta.ChunkBySHA256(ctx, c.SHA256)
		if errs.Is(err, errs.NotFound) || err == nil && got.ID != c.ID {
			return meta.Node{}, 0, chunkGone(op)
		}
		if err != nil {
			return meta.Node{}, 0, err
		}
	}
	ctx = context.WithoutCancel(ctx)
	if err := d.CheckWrite(ctx, uid, path); err != nil {
		return meta.Node{}, 0, err
	}
	charged, err := d.mkdirParentsInStep(ctx, uid, path)
	if err != nil {
		entries.CommitInStep(ctx, charged) // the folders made stay made
		return meta.Node{}, 0, err
	}
	n, growth, metaGrowth, err := d.meta.MergeSession(ctx, id, f, f.FileHash, now)
	entries.CommitInStep(ctx, charged+metaGrowth) // the session's reservation is committed with growth after
	if err != nil {
		return meta.Node{}, 0, err
	}
	return n, growth, nil
}
