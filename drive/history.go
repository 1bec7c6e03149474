package drive

import (
	"context"
	"sort"
	"time"

	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// History: no delete loses a byte at once. Every delete path (Remove, and a
// Move or Copy that overwrites with a folder on either side) ends in the
// metadata store's trash (meta/trash.go decides, in the change's own
// transaction): the node goes with its subtree as one item and its chunks
// stay live. The trash is not in the user's quota; it is bounded instead by
// age (TrashRetention) and, with the other history, by a share of the
// user's quota or of the volume (HistoryShare), oldest first. Expunging an
// item is what makes its chunks garbage for GC.

// DefaultTrashRetention is how long a trash item is kept unless configured.
const DefaultTrashRetention = 30 * 24 * time.Hour

// DefaultHistoryShare is the part of a user's quota (or of the volume) their
// trash and versions may use together unless configured.
const DefaultHistoryShare = 0.5

// restoreSlack covers what a restore may charge beyond the item itself: a
// longer name (" (restored 999)") and the folders it recreates.
func restoreSlack(p string) int64 {
	var n int64 = 32
	for d := vpath.Parent(p); d != "/" && d != ""; d = vpath.Parent(d) {
		n += meta.EntryCharge(vpath.Base(d))
	}
	return n
}

// TrashList returns uid's trash, newest first: at most limit items with ids
// below before (0: from the newest).
func (d *Drive) TrashList(ctx context.Context, uid, before int64, limit int) ([]meta.TrashItem, error) {
	if limit <= 0 {
		return nil, errs.Errorf("drive.TrashList", errs.Invalid, "limit must be positive")
	}
	return d.meta.ListTrash(ctx, uid, before, limit)
}

// TrashItem returns uid's item id.
func (d *Drive) TrashItem(ctx context.Context, uid, id int64) (meta.TrashItem, error) {
	return d.meta.TrashItem(ctx, uid, id)
}

// TrashItemAt returns uid's newest trash item deleted at p.
func (d *Drive) TrashItemAt(ctx context.Context, uid int64, p string) (meta.TrashItem, error) {
	p, err := clean("drive.TrashItemAt", p)
	if err != nil {
		return meta.TrashItem{}, err
	}
	return d.meta.TrashByPath(ctx, uid, p)
}

// RestoreTrash puts uid's item id back where it was, recreating missing
// folders, under the first free name RestoredName gives when the path is
// taken, and returns the path it restored to. It never overwrites. The
// restored files count in the quota again (Quota when they do not fit).
// Unknown, another user's and already restored items are NotFound alike; a
// file where one of the path's folders should be is NotDir (409).
func (d *Drive) RestoreTrash(ctx context.Context, uid, id int64) (string, error) {
	const op = "drive.RestoreTrash"
	it, err := d.meta.TrashItem(ctx, uid, id)
	if err != nil {
		return "", err
	}
	need, err := d.meta.TrashCost(ctx, uid, id)
	if err != nil {
		return "", err
	}
	if err := d.room(op); err != nil {
		return "", err
	}
	h := d.quota.NewHold(uid)
	if err := h.Grow(ctx, need+restoreSlack(it.Path)); err != nil {
		return "", err
	}
	var dst string
	err = d.holdCommit(ctx, ownCommit, h, func(tx *meta.Tx) (delta int64, err error) {
		dst, delta, err = d.meta.RestoreTrashTx(ctx, tx, uid, id, h.Reserved())
		return delta, err
	})
	if err != nil {
		h.Release(ctx)
		return "", d.noteFull(err)
	}
	return dst, nil
}

// ExpungeTrash deletes uid's item id for good.
func (d *Drive) ExpungeTrash(ctx context.Context, uid, id int64) error {
	return d.meta.ExpungeTrash(ctx, uid, id)
}

// TrashUsage returns the bytes of the files in each user's trash (users
// with an empty trash are absent).
func (d *Drive) TrashUsage(ctx context.Context) (map[int64]int64, error) {
	return d.meta.TrashUsage(ctx)
}

// VersionUsage returns the bytes of each user's file versions (each
// version's size, though versions share most chunks with their file), for
// the users that have any.
func (d *Drive) VersionUsage(ctx context.Context) (map[int64]int64, error) {
	return d.meta.VersionUsage(ctx)
}

// EmptyTrash deletes every item of uid's trash for good and returns how many
// there were.
func (d *Drive) EmptyTrash(ctx context.Context, uid int64) (int64, error) {
	return d.meta.EmptyTrash(ctx, uid)
}

// PurgeTrash deletes for good, on an admin's behalf, the items of user
// name's trash deleted longer than olderThan ago (all of them for 0), and
// returns how many.
func (d *Drive) PurgeTrash(ctx context.Context, name string, olderThan time.Duration) (int64, error) {
	if olderThan < 0 {
		return 0, errs.Errorf("drive.PurgeTrash", errs.Invalid, "negative age")
	}
	u, err := d.meta.UserByName(ctx, name)
	if err != nil {
		return 0, err
	}
	if olderThan == 0 {
		return d.meta.EmptyTrash(ctx, u.ID)
	}
	cutoff := d.now().Add(-olderThan)
	var n int64
	for {
		its, err := d.meta.OldestTrash(ctx, u.ID, cutoff, historyBatch)
		if err != nil {
			return n, err
		}
		for _, it := range its {
			if err := d.meta.ExpungeTrash(ctx, u.ID, it.ID); err != nil && !errs.Is(err, errs.NotFound) {
				return n, err
			}
			n++
		}
		if len(its) < historyBatch {
			return n, nil
		}
	}
}

// HistoryResult reports what a history pass expunged.
type HistoryResult struct {
	Expired   int64 // trash items past the retention
	OverShare int64 // items expunged to bring a user within the history share
}

// historyBatch bounds the items a pass reads at once.
const historyBatch = 500

// ExpireHistory runs one pass of the history's bounds: it expunges the trash
// items deleted longer than TrashRetention ago (on the drive's clock), then,
// for each user whose history uses more than their share, the oldest items
// until it fits. The daemon runs it periodically, on one node at a time.
func (d *Drive) ExpireHistory(ctx context.Context) (HistoryResult, error) {
	var res HistoryResult
	cutoff := d.now().Add(-d.trashRetention)
	for {
		its, err := d.meta.OldestTrash(ctx, 0, cutoff, historyBatch)
		if err != nil {
			return res, err
		}
		for _, it := range its {
			if err := d.meta.ExpungeTrash(ctx, it.UserID, it.ID); err != nil && !errs.Is(err, errs.NotFound) {
				return res, err
			}
			res.Expired++
		}
		if len(its) < historyBatch {
			break
		}
	}
	n, err := d.enforceHistoryShare(ctx)
	res.OverShare = n
	if res.Expired+res.OverShare > 0 {
		d.log.Info("history expunged", "expired", res.Expired, "over_share", res.OverShare)
	}
	return res, err
}

// HistoryLimit returns the bytes uid's history may use: HistoryShare of
// their quota, or of the volume for a user without one; -1 when neither
// bounds it.
func (d *Drive) HistoryLimit(u meta.User) int64 {
	base := u.QuotaTotal
	if base <= 0 && d.volume != nil {
		base = d.volume()
	}
	if base <= 0 {
		return -1
	}
	return int64(float64(base) * d.historyShare)
}

// historyItem is one expungeable piece of a user's history, for the
// share's oldest-first order.
type historyItem struct {
	when    time.Time
	bytes   int64
	expunge func(context.Context) error
}

// historyUsage returns the bytes each user's history holds: the one sum
// every kind of history (trash items; file versions) adds its term to.
func (d *Drive) historyUsage(ctx context.Context) (map[int64]int64, error) {
	usage, err := d.meta.TrashUsage(ctx)
	if err != nil {
		return nil, err
	}
	versions, err := d.meta.VersionUsage(ctx)
	if err != nil {
		return nil, err
	}
	for uid, n := range versions {
		usage[uid] += n
	}
	return usage, nil
}

// oldestHistory returns up to limit of uid's (0: any user's) oldest
// history items, oldest first, merged over every kind of history.
func (d *Drive) oldestHistory(ctx context.Context, uid int64, limit int) ([]historyItem, error) {
	its, err := d.meta.OldestTrash(ctx, uid, time.Time{}, limit)
	if err != nil {
		return nil, err
	}
	vs, err := d.meta.OldestVersions(ctx, uid, 0, limit)
	if err != nil {
		return nil, err
	}
	out := make([]historyItem, 0, len(its)+len(vs))
	for _, it := range its {
		out = append(out, historyItem{when: it.Deleted, bytes: it.Size, expunge: func(ctx context.Context) error {
			return d.meta.ExpungeTrash(ctx, it.UserID, it.ID)
		}})
	}
	for _, v := range vs {
		out = append(out, historyItem{when: v.Saved, bytes: v.Size, expunge: func(ctx context.Context) error {
			_, err := d.meta.ExpungeVersion(ctx, v.UserID, v.ID)
			return err
		}})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].when.Before(out[j].when) })
	return out[:min(len(out), limit)], nil
}

// enforceHistoryShare expunges, per user over their HistoryLimit, the
// oldest history first until the rest fits.
func (d *Drive) enforceHistoryShare(ctx context.Context) (int64, error) {
	usage, err := d.historyUsage(ctx)
	if err != nil {
		return 0, err
	}
	uids := make([]int64, 0, len(usage))
	for uid := range usage {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	var n int64
	for _, uid := range uids {
		u, err := d.meta.UserByID(ctx, uid)
		if errs.Is(err, errs.NotFound) {
			continue
		}
		if err != nil {
			return n, err
		}
		limit := d.HistoryLimit(u)
		used := usage[uid]
		for limit >= 0 && used > limit {
			its, err := d.oldestHistory(ctx, uid, historyBatch)
			if err != nil {
				return n, err
			}
			if len(its) == 0 {
				break
			}
			for _, it := range its {
				if used <= limit {
					break
				}
				if err := it.expunge(ctx); err != nil && !errs.Is(err, errs.NotFound) {
					return n, err
				}
				used -= it.bytes
				n++
			}
		}
	}
	return n, nil
}

// maxExpungeForRoom bounds the history items one chunk write that finds
// the store full expunges to make room before it is refused.
const maxExpungeForRoom = 64

// expungeOldestHistory expunges the oldest history item of any user, for a
// write that needs the room; false when there is none.
func (d *Drive) expungeOldestHistory(ctx context.Context) (bool, error) {
	its, err := d.oldestHistory(ctx, 0, 1)
	if err != nil || len(its) == 0 {
		return false, err
	}
	if err := its[0].expunge(ctx); err != nil && !errs.Is(err, errs.NotFound) {
		return false, err
	}
	d.log.Warn("chunk store full: expunged the oldest history item to make room", "bytes", its[0].bytes, "since", its[0].when)
	return true, nil
}

// OpenTrash opens a reader over the bytes of uid's trash item id, a file,
// as it was deleted, without restoring it (the Nextcloud clients' trash
// download). A folder item is IsDir; another user's item is NotFound, as
// an unknown one is.
func (d *Drive) OpenTrash(ctx context.Context, uid, id int64) (*Reader, meta.TrashItem, error) {
	it, err := d.meta.TrashItem(ctx, uid, id)
	if err != nil {
		return nil, meta.TrashItem{}, err
	}
	if it.IsDir {
		return nil, meta.TrashItem{}, errs.E("drive.OpenTrash", errs.IsDir, it.Path, nil)
	}
	n, cs, err := d.meta.OpenFile(ctx, uid, meta.TrashRoot(id))
	if err != nil {
		// Restored or expunged since the item was read.
		return nil, meta.TrashItem{}, err
	}
	if n.IsSymlink() {
		return &Reader{d: d, ctx: ctx, node: n, curIdx: -1}, it, nil
	}
	// Pinned, as any reader's: an expunge meanwhile leaves the chunks to GC
	// only once the reader is closed.
	return d.OpenVersion(ctx, n, cs), it, nil
}

// TrashNode returns the node of uid's trash item id as it lies in the
// trash (its id is the one the node had in the tree).
func (d *Drive) TrashNode(ctx context.Context, uid, id int64) (meta.Node, error) {
	if _, err := d.meta.TrashItem(ctx, uid, id); err != nil {
		return meta.Node{}, err
	}
	return d.meta.Stat(ctx, uid, meta.TrashRoot(id))
}
