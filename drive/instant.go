package drive

import (
	"context"
	"time"

	"netdisk/dedup"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// commitHeldContent makes p a new version whose content is that of a file uid
// already holds with this file hash and size, without any byte being sent:
// PutFile's instant path (fileHash given, the user holds the content). ok is
// false, with no error and nothing changed, when uid holds no such file (or
// it went away meanwhile): the caller then reads the bytes.
// Only uid's own files count, so the answer never tells whether another user
// holds the content. The held file must also have the SHA-256 name fileSHA
// (chunker.FileSHA256): the file hash is made of MD5s, which two different
// contents can share, so without fileSHA ("") nothing is committed. mtime
// zero means now.
//
// holder is whose holdings count: uid, or the recipient writing into uid's
// tree through a share (the content they hold, not the owner's: naming
// content proves nothing).
func (d *Drive) commitHeldContent(ctx context.Context, holder, uid int64, p, fileHash, fileSHA string, size int64, mtime time.Time) (n meta.Node, ok bool, err error) {
	const op = "drive.PutFile"
	if p, err = clean(op, p); err != nil {
		return n, false, err
	}
	if size <= 0 || fileSHA == "" {
		// An empty file has nothing to save (the write path commits it);
		// an MD5 name alone binds nothing.
		return n, false, nil
	}
	// Only uid's own files, and among those sharing the file hash (made of
	// MD5s, which two contents can share) the one with these very bytes.
	srcID, found, err := d.HeldContent(ctx, holder, fileHash, size, fileSHA)
	if err != nil || !found {
		return n, false, err
	}
	fcs, err := d.meta.FileChunks(ctx, srcID)
	if err != nil {
		return n, false, err
	}
	if meta.ContentSHA256(fcs) != fileSHA {
		return n, false, nil // replaced since it was found: the caller reads the body
	}
	return d.commitContent(ctx, op, uid, p, fcs, fileHash, size, mtime)
}

// HeldContent finds a file with this file hash, size and SHA-256 name that
// uid can read: one of their own, or one inside a share of another user's
// they receive. Binding the latter tells them nothing they cannot learn by
// reading it; the owners' other files never count, so a share is no oracle
// for content outside it.
func (d *Drive) HeldContent(ctx context.Context, uid int64, fileHash string, size int64, fileSHA string) (nodeID int64, found bool, err error) {
	nodeID, found, err = d.meta.OwnFileWithContent(ctx, uid, fileHash, size, fileSHA)
	if err != nil || found || fileSHA == "" {
		return nodeID, found, err
	}
	ms, err := d.meta.Mounts(ctx, uid)
	if err != nil {
		return 0, false, err
	}
	for _, m := range ms {
		if !m.Live() {
			continue
		}
		nodeID, found, err = d.meta.FileWithContentAt(ctx, m.OwnerID, m.TargetAt, fileHash, size, fileSHA)
		if err != nil || found {
			return nodeID, found, err
		}
	}
	return 0, false, nil
}

// commitContent makes p a new version of user uid's made of chunks fcs,
// which a file held when they were read: the chunk references are taken,
// no byte is read or written. ok is false, with nothing changed, when a
// chunk was collected meanwhile. The bytes are charged to uid.
func (d *Drive) commitContent(ctx context.Context, op string, uid int64, p string, fcs []meta.FileChunk, fileHash string, size int64, mtime time.Time) (n meta.Node, ok bool, err error) {
	// Pinned, GC cannot delete the chunks before the commit; their records
	// are re-checked under the pins (as CommitSession does): one collected
	// before the pin means the bytes are read instead.
	for _, c := range fcs {
		d.pins.Pin(ctx, dedup.Key(c.SHA256))
	}
	defer func() {
		for _, c := range fcs {
			d.pins.Unpin(ctx, dedup.Key(c.SHA256))
		}
	}()
	for _, c := range fcs {
		got, err := d.meta.ChunkBySHA256(ctx, c.SHA256)
		if errs.Is(err, errs.NotFound) || err == nil && got.ID != c.ID {
			return n, false, nil
		}
		if err != nil {
			return n, false, err
		}
	}
	// The content checksums come from the background pass, as for a merge.
	f := meta.NewFile{Size: size, FileHash: fileHash, ModTime: mtime}
	if f.ModTime.IsZero() {
		f.ModTime = d.now()
	}
	for _, c := range fcs {
		f.Chunks = append(f.Chunks, c.Chunk)
	}
	old, existed, parent, hasParent, err := d.statWithParent(ctx, uid, p)
	switch {
	case err != nil:
		return n, false, err
	case existed && old.IsDir:
		return n, false, errs.E(op, errs.IsDir, p, nil)
	case !hasParent:
		return n, false, errs.E(op, errs.NoParent, p, nil)
	case !parent.IsDir:
		return n, false, errs.E(op, errs.NotDir, p, nil)
	}
	if err := d.checkLocks(ctx, uid, writeTarget(p, existed)); err != nil {
		return n, false, err
	}
	if err := d.room(op); err != nil {
		return n, false, err
	}
	hold := d.quota.NewHold(uid)
	need := size
	if !existed {
		need += meta.EntryCharge(vpath.Base(p))
	}
	if err := hold.Grow(ctx, need); err != nil {
		return n, false, err
	}
	defer hold.Release(context.WithoutCancel(ctx))
	cctx := context.WithoutCancel(ctx)
	err = d.holdCommit(cctx, sharedCommit, hold, func(tx *meta.Tx) (delta int64, err error) {
		n, delta, err = d.meta.CommitFileTx(cctx, tx, uid, p, f, hold.Reserved())
		return delta, err
	})
	if err != nil {
		return meta.Node{}, false, err
	}
	d.KickChecksums()
	return n, true, nil
}
