package drive

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"netdisk/dedup"
	"netdisk/errs"
	"netdisk/meta"
)

// GCResult reports what a collection did.
type GCResult struct {
	Chunks       int64 // chunk records and blobs removed
	Bytes        int64 // their size
	OrphanBlobs  int64 // blobs with no record (left by a crash before commit)
	SkippedInUse int64 // unreferenced but pinned by an upload or reader
}

// GC removes chunks that no file (nor, through meta, any open upload session)
// references. Each deletion happens under the chunk's pin stripe after a
// re-check in the metadata store, so a chunk an upload has just claimed, or a
// reader has open, survives. It then removes blobs that have no record at all.
func (d *Drive) GC(ctx context.Context) (GCResult, error) {
	d.gcMu.Lock()
	defer d.gcMu.Unlock()
	return d.gcLocked(ctx)
}

// StoreBlob stores a chunk durably. When the store is full it runs one GC
// pass and retries once: unreferenced chunks become free space at once, not
// at the next scheduled GC. Still full, it expunges the oldest history item
// (of any user: the volume is shared), collects and retries, up to
// maxExpungeForRoom items. Chunks of writes in progress are
// pinned, so the pass never takes them. A store still full is errs.NoSpace
// (507 / ENOSPC at the edges).
func (d *Drive) StoreBlob(ctx context.Context, key dedup.Key, b []byte) error {
	if err := d.room("drive.Store"); err != nil {
		return err
	}
	runs := d.gcRuns.Load()
	err := d.blobs.Put(ctx, key, b)
	if errs.KindOf(err) == errs.NoSpace {
		d.log.Warn("chunk store full: collecting unreferenced chunks, then retrying once", "err", err)
		d.noteFull(err) // GC writes the database: it may need the reserve
		d.reclaim(ctx, runs)
		// Not into the reserve's space, if it was just given to deletions.
		if err = d.room("drive.Store"); err == nil {
			err = d.blobs.Put(ctx, key, b)
		}
		// Still full: history makes room before a write is refused, the
		// oldest first (history.go).
		for i := 0; i < maxExpungeForRoom && errs.KindOf(err) == errs.NoSpace; i++ {
			runs = d.gcRuns.Load()
			if gone, herr := d.expungeOldestHistory(ctx); herr != nil || !gone {
				break
			}
			d.reclaim(ctx, runs)
			if err = d.room("drive.Store"); err == nil {
				err = d.blobs.Put(ctx, key, b)
			}
		}
	}
	if err != nil {
		return d.noteFull(errs.E("drive.Store", errs.Other, "", err)) // NoSpace by its errno
	}
	return nil
}

// reclaim runs a GC pass unless one completed since runs was read: writers
// that hit a full disk together trigger one pass, not one each.
func (d *Drive) reclaim(ctx context.Context, runs uint64) {
	d.gcMu.Lock()
	defer d.gcMu.Unlock()
	if d.gcRuns.Load() != runs {
		return
	}
	if _, err := d.gcLocked(ctx); err != nil && ctx.Err() == nil {
		d.log.Warn("gc on a full chunk store", "err", err)
	}
}

func (d *Drive) gcLocked(ctx context.Context) (GCResult, error) {
	p := &d.progress
	p.gcRunning.Store(true)
	defer p.gcRunning.Store(false)
	res, err := d.collectLocked(ctx)
	// What a pass collected counts even when it stopped on an error.
	p.gcChunks.Add(int64(res.Chunks))
	p.gcBytes.Add(res.Bytes)
	p.gcOrphans.Add(int64(res.OrphanBlobs))
	if err == nil {
		p.gcRuns.Add(1)
		p.gcLast.Store(d.now().UnixNano())
	}
	return res, err
}

// collectLocked is one GC pass (gcMu held).
func (d *Drive) collectLocked(ctx context.Context) (GCResult, error) {
	defer d.gcRuns.Add(1)
	var res GCResult
	seen := map[string]bool{}
	for {
		cs, err := d.meta.UnreferencedChunks(ctx, 1000)
		if err != nil {
			return res, err
		}
		progress := false
		for _, c := range cs {
			if seen[c.SHA256] {
				continue
			}
			seen[c.SHA256] = true
			progress = true
			ran, err := d.pins.IfUnpinned(ctx, dedup.Key(c.SHA256), func() error {
				gone, err := d.meta.DeleteChunkIfUnreferenced(ctx, c.SHA256)
				if d.retryable(err) {
					gone, err = d.meta.DeleteChunkIfUnreferenced(ctx, c.SHA256)
				}
				if err != nil || !gone {
					return err
				}
				res.Chunks++
				res.Bytes += c.Size
				return d.blobs.Delete(ctx, dedup.Key(c.SHA256))
			})
			if err != nil {
				return res, err
			}
			if !ran {
				res.SkippedInUse++
			}
		}
		if !progress {
			break
		}
	}
	// Blobs without a record: a crash between storing and committing.
	err := d.blobs.Walk(ctx, func(k dedup.Key) error {
		if _, err := d.meta.ChunkBySHA256(ctx, string(k)); err == nil {
			return nil
		}
		_, err := d.pins.IfUnpinned(ctx, k, func() error {
			// Re-check under the stripe: a commit may have inserted it meanwhile.
			if _, err := d.meta.ChunkBySHA256(ctx, string(k)); err == nil {
				return nil
			}
			res.OrphanBlobs++
			return d.blobs.Delete(ctx, k)
		})
		return err
	})
	if err == nil {
		d.log.Info("gc done", "chunks", res.Chunks, "bytes", res.Bytes, "orphans", res.OrphanBlobs, "in_use", res.SkippedInUse)
	}
	return res, err
}

// FsckProblem is one chunk that is not as its record says, a trash item
// and its nodes that lost each other (Problem "trash", no SHA256), or a
// broken reference of a version or of a file's chunk list (Problem
// "history", no SHA256).
type FsckProblem struct {
	SHA256  string
	Problem string // "missing", "corrupt", "unreadable", "trash", "history"
	Detail  string
}

// FsckResult reports a full check.
type FsckResult struct {
	Checked  int64
	Bytes    int64
	Problems []FsckProblem
}

// Fsck re-hashes every stored chunk against its record (the chunks of
// files in the trash among them), then checks that every trash item and
// its nodes find each other. progress, when not nil, is called after each
// chunk.
func (d *Drive) Fsck(ctx context.Context, progress func(done, total int64)) (FsckResult, error) {
	d.gcMu.Lock()
	defer d.gcMu.Unlock()
	st, err := d.meta.Stats(ctx)
	if err != nil {
		return FsckResult{}, err
	}
	var res FsckResult
	res.Problems = []FsckProblem{}
	err = d.meta.EachChunk(ctx, func(c meta.Chunk) error {
		res.Checked++
		if p := d.checkChunk(ctx, c); p != nil {
			res.Problems = append(res.Problems, *p)
		} else {
			res.Bytes += c.Size
		}
		if progress != nil {
			progress(res.Checked, st.Chunks)
		}
		return ctx.Err()
	})
	if err != nil {
		return res, err
	}
	// The trash's references: an item and its nodes find each other.
	lost, err := d.meta.CheckTrash(ctx)
	if err != nil {
		return res, err
	}
	for _, l := range lost {
		res.Problems = append(res.Problems, FsckProblem{Problem: "trash", Detail: l})
	}
	broken, err := d.meta.CheckHistory(ctx)
	for _, l := range broken {
		res.Problems = append(res.Problems, FsckProblem{Problem: "history", Detail: l})
	}
	return res, err
}

func (d *Drive) checkChunk(ctx context.Context, c meta.Chunk) *FsckProblem {
	f, err := d.blobs.Open(ctx, dedup.Key(c.SHA256))
	if err != nil {
		return &FsckProblem{SHA256: c.SHA256, Problem: "missing", Detail: err.Error()}
	}
	defer f.Close()
	hs, hm := sha256.New(), md5.New()
	n, err := io.Copy(io.MultiWriter(hs, hm), f)
	if err != nil {
		return &FsckProblem{SHA256: c.SHA256, Problem: "unreadable", Detail: err.Error()}
	}
	gotS, gotM := hex.EncodeToString(hs.Sum(nil)), hex.EncodeToString(hm.Sum(nil))
	if n != c.Size || gotS != c.SHA256 || gotM != c.MD5 {
		return &FsckProblem{SHA256: c.SHA256, Problem: "corrupt",
			Detail: fmt.Sprintf("size %d (want %d), sha256 %s, md5 %s (want %s)", n, c.Size, gotS, gotM, c.MD5)}
	}
	return nil
}

// Stats returns store-wide figures.
func (d *Drive) Stats(ctx context.Context) (meta.Stats, error) { return d.meta.Stats(ctx) }
