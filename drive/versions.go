package drive

import (
	"context"
	"time"

	"netdisk/davlock"
	"netdisk/meta"
)

// A file's versions are kept by the metadata store, in the transaction of
// every change of the file's content (meta.Versions: which replacements keep
// a version is decided there, once, because every path that replaces a
// chunk list — a commit of the one write path, a merge, an instant commit,
// a file moved or copied over a file, a restore — ends in that store's
// transaction). The drive serves them and applies retention.

// FileVersions returns file p and its versions, newest first. A folder is
// Invalid (400).
func (d *Drive) FileVersions(ctx context.Context, uid int64, p string) (meta.Node, []meta.Version, error) {
	p, err := clean("drive.FileVersions", p)
	if err != nil {
		return meta.Node{}, nil, err
	}
	ctx, w, err := d.resolve(ctx, "drive.FileVersions", uid, p, readAccess)
	if err != nil {
		return meta.Node{}, nil, err
	}
	if w.m != nil {
		n, vs, err := d.FileVersions(ctx, w.uid, w.path)
		return w.node(n), vs, w.err(err)
	}
	return d.meta.FileVersions(ctx, uid, p)
}

// OpenFileVersion opens a reader over version vid of file p (Range reads
// like any Reader: Seek and Segments). Its node is the file's with the
// version's content fields. A version of another file is NotFound.
func (d *Drive) OpenFileVersion(ctx context.Context, uid int64, p string, vid int64) (*Reader, meta.Version, error) {
	p, err := clean("drive.OpenFileVersion", p)
	if err != nil {
		return nil, meta.Version{}, err
	}
	ctx, w, err := d.resolve(ctx, "drive.OpenFileVersion", uid, p, readAccess)
	if err != nil {
		return nil, meta.Version{}, err
	}
	if w.m != nil {
		r, v, err := d.OpenFileVersion(ctx, w.uid, w.path, vid)
		if r != nil {
			r.node = w.node(r.node)
		}
		return r, v, w.err(err)
	}
	n, _, err := d.meta.FileVersions(ctx, uid, p)
	if err != nil {
		return nil, meta.Version{}, err
	}
	v, cs, err := d.meta.Version(ctx, uid, p, vid)
	if err != nil {
		return nil, meta.Version{}, err
	}
	n.Size, n.Mode, n.ModTime, n.FileHash, n.MD5, n.SHA1 = v.Size, v.Mode, v.ModTime, v.FileHash, v.MD5, v.SHA1
	// OpenVersion pins the chunks; a version expunged meanwhile keeps them
	// until the reader closes, as a replaced file's reader does.
	return d.OpenVersion(ctx, n, cs), v, nil
}

// RestoreVersion makes version vid the content of file p; the content it
// replaces becomes a version. Growth is reserved in the ledger first, like
// any write.
func (d *Drive) RestoreVersion(ctx context.Context, uid int64, p string, vid int64) (meta.Node, error) {
	const op = "drive.RestoreVersion"
	p, err := clean(op, p)
	if err != nil {
		return meta.Node{}, err
	}
	ctx, w, err := d.resolve(ctx, op, uid, p, writeAccess)
	if err != nil {
		return meta.Node{}, err
	}
	if w.m != nil {
		n, err := d.RestoreVersion(ctx, w.uid, w.path, vid)
		return w.node(n), w.err(err)
	}
	if err := d.checkLocks(ctx, uid, davlock.Target{Path: p}); err != nil {
		return meta.Node{}, err
	}
	if err := d.room(op); err != nil {
		return meta.Node{}, err
	}
	cur, _, err := d.meta.FileVersions(ctx, uid, p)
	if err != nil {
		return meta.Node{}, err
	}
	v, _, err := d.meta.Version(ctx, uid, p, vid)
	if err != nil {
		return meta.Node{}, err
	}
	h := d.quota.NewHold(uid)
	if err := h.Grow(ctx, max(v.Size-cur.Size, 0)); err != nil {
		return meta.Node{}, err
	}
	var n meta.Node
	err = d.holdCommit(ctx, ownCommit, h, func(tx *meta.Tx) (delta int64, err error) {
		n, delta, err = d.meta.RestoreVersionTx(ctx, tx, uid, p, vid, d.now(), h.Reserved())
		return delta, err
	})
	if err != nil {
		h.Release(ctx)
	}
	return n, d.noteFull(err)
}

// DeleteVersion removes version vid of file p; its chunks are GC's once
// nothing else holds them.
func (d *Drive) DeleteVersion(ctx context.Context, uid int64, p string, vid int64) error {
	p, err := clean("drive.DeleteVersion", p)
	if err != nil {
		return err
	}
	ctx, w, err := d.resolve(ctx, "drive.DeleteVersion", uid, p, writeAccess)
	if err != nil {
		return err
	}
	if w.m != nil {
		return w.err(d.DeleteVersion(ctx, w.uid, w.path, vid))
	}
	if err := d.checkLocks(ctx, uid, davlock.Target{Path: p}); err != nil {
		return err
	}
	return d.meta.DeleteVersion(ctx, uid, p, vid)
}

// VersionPolicy bounds the versions kept. The zero value thins only.
type VersionPolicy struct {
	MaxAge time.Duration // versions saved longer ago go; 0: no bound
	Max    int           // at most this many per file, the newest; 0: no bound
}

// versionSteps is the thinning schedule (Nextcloud's): a version of a given
// age is kept only if it was saved at least step before the next newer
// version kept. Ages beyond the last bound use the last step.
var versionSteps = []struct{ upTo, step time.Duration }{
	{time.Minute, 10 * time.Second},
	{time.Hour, time.Minute},
	{24 * time.Hour, time.Hour},
	{30 * 24 * time.Hour, 24 * time.Hour},
	{0, 7 * 24 * time.Hour},
}

func thinStep(age time.Duration) time.Duration {
	for _, s := range versionSteps {
		if s.upTo == 0 || age < s.upTo {
			return s.step
		}
	}
	return versionSteps[len(versionSteps)-1].step
}

// expiredVersions returns the ids among vs (one file's, oldest first) that
// retention drops at now: past the maximum age, closer than the schedule's
// step to the newer version kept, beyond the maximum count.
func expiredVersions(vs []meta.Version, now time.Time, p VersionPolicy) []int64 {
	var drop []int64
	kept := 0
	var newer time.Time // the newest version kept so far; zero before the first
	for i := len(vs) - 1; i >= 0; i-- {
		v := vs[i]
		age := now.Sub(v.Saved)
		switch {
		case p.MaxAge > 0 && age > p.MaxAge,
			p.Max > 0 && kept >= p.Max,
			!newer.IsZero() && newer.Sub(v.Saved) < thinStep(age):
			drop = append(drop, v.ID)
		default:
			kept++
			newer = v.Saved
		}
	}
	return drop
}

// ExpireVersions applies the thinning schedule and p to every file's
// versions on the drive's clock and returns how many versions it expunged.
// Their chunks are GC's once nothing else holds them.
func (d *Drive) ExpireVersions(ctx context.Context, p VersionPolicy) (int, error) {
	now := d.now()
	n := 0
	var after int64
	for {
		ids, err := d.meta.VersionedFiles(ctx, after, 500)
		if err != nil || len(ids) == 0 {
			return n, err
		}
		for _, id := range ids {
			vs, err := d.meta.NodeVersions(ctx, id)
			if err != nil {
				return n, err
			}
			for _, vid := range expiredVersions(vs, now, p) {
				ok, err := d.meta.ExpungeVersion(ctx, vs[0].UserID, vid)
				if err != nil {
					return n, err
				}
				if ok {
					n++
				}
			}
			after = id
		}
	}
}
