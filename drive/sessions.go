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

// The operations package upload composes its sessions from. upload keeps the
// protocol (session rows through meta.Sessions, proofs, expiry) and the quota
// ledger calls; every step that touches chunk bytes, pins or the tree is
// here, so the rules that protect chunks from GC live in one package.
//
// A chunk that vanished (GC took it before it was pinned) is an error of kind
// NotFound wrapping meta.ErrChunkGone: instant upload then answers "send the
// bytes".

func chunkGone(op string) error { return errs.E(op, errs.NotFound, "", meta.ErrChunkGone) }

// StoreChunk stores the bytes b of chunk c durably (fsynced), then runs
// record while c is still pinned, so GC cannot remove the blob between the
// store and the record. Durable first, recorded second: a crash in between
// leaves an orphan blob for GC, never a record without bytes.
func (d *Drive) StoreChunk(ctx context.Context, c meta.Chunk, b []byte, record func() error) error {
	key := dedup.Key(c.SHA256)
	d.pins.Pin(ctx, key)
	defer d.pins.Unpin(ctx, key)
	if err := d.StoreBlob(ctx, key, b); err != nil {
		return err
	}
	return record()
}

// ReuseChunk runs record while the stored chunk c is pinned, if its blob is
// still there; false (and no record) when it is gone.
func (d *Drive) ReuseChunk(ctx context.Context, c meta.Chunk, record func() error) (bool, error) {
	key := dedup.Key(c.SHA256)
	d.pins.Pin(ctx, key)
	defer d.pins.Unpin(ctx, key)
	if ok, err := d.blobs.Has(ctx, key); err != nil || !ok {
		return false, err
	}
	return true, record()
}

// ChunksHeld returns the stored chunks with that MD5 and size (usually zero
// or one) with who holds them: uid's own, the distinct users whose files hold
// them (counted up to limit), their secret draw (meta.ChunksHeld). One read
// whatever the content, so that asking costs the same for content the server
// lacks and for content it will not reveal.
func (d *Drive) ChunksHeld(ctx context.Context, uid int64, md5 string, size int64, limit int) ([]meta.HeldChunk, error) {
	return d.meta.ChunksHeld(ctx, uid, md5, size, limit)
}

// FileHeld finds a file version of that hash and size, uid's own when there
// is one, with who holds that content (meta.FileHeld); found is false when no
// file has it. Like ChunksHeld, one read whatever the content: the chunks are
// fetched apart (HeldFileChunks), only when the caller will use them.
func (d *Drive) FileHeld(ctx context.Context, uid int64, fileHash string, size int64, limit int) (nodeID int64, h meta.Holders, found bool, err error) {
	return d.meta.FileHeld(ctx, uid, fileHash, size, limit)
}

// HeldFileChunks returns the chunks, in order, of the file version FileHeld
// found (empty when it has gone since).
func (d *Drive) HeldFileChunks(ctx context.Context, nodeID int64) ([]meta.FileChunk, error) {
	return d.meta.FileChunks(ctx, nodeID)
}

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

// ReserveEntries reserves, outside the quota Step of a session's merge, what
// the entries the merge will create cost (the file's, if path is free, and
// its missing folders': meta/charge.go), so that the merge is admitted by
// the ledger like bytes. Pass the hold to CommitSession; Release it after
// the Step (a no-op once committed).
func (d *Drive) ReserveEntries(ctx context.Context, uid int64, path string) (*quota.Hold, error) {
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

// CommitSession makes f (whose chunks are stored) the file at path and
// closes upload session id as merged with f.FileHash, in one transaction
// that also settles the session's quota flushes (meta.MergeSession); now
// stamps the session. It returns the node and how much the commit grew the
// user's finished bytes (at most the session's declared size: errs.Quota
// beyond). The chunks are pinned and their records re-checked first, so GC
// cannot take one between the check and the commit (gone: meta.ErrChunkGone).
// Missing parents are created; the WebDAV locks on path bind the commit as
// any write. Once here the commit is not cut short by ctx: every byte has
// arrived. A session no longer open is meta.ErrNoSession. Call it inside the
// quota Step of the session's merge, with the hold ReserveEntries made for
// the entries the merge creates: it is committed here.
func (d *Drive) CommitSession(ctx context.Context, uid int64, path, id string, f meta.NewFile, now time.Time, entries *quota.Hold) (meta.Node, int64, error) {
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
	entries.CommitInStep(ctx, charged+metaGrowth) // the caller commits the session's reservation with growth
	if err != nil {
		return meta.Node{}, 0, err
	}
	d.KickChecksums() // a merged file's content checksums come from the background pass
	return n, growth, nil
}
