package drive

import (
	"context"
	"sync"

	"netdisk/dedup"
	"netdisk/errs"
	"netdisk/meta"
)

// PinVersion returns the current version of uid's file p with its chunks,
// pinned so GC keeps them until unpin is called (once; later calls do
// nothing) even if a newer version replaces the file meanwhile. Async
// downloads deliver this one version to every target.
func (d *Drive) PinVersion(ctx context.Context, uid int64, p string) (meta.Node, []meta.FileChunk, func(), error) {
	n, err := d.Stat(ctx, uid, p)
	if err != nil {
		return meta.Node{}, nil, nil, err
	}
	if n.IsDir {
		return meta.Node{}, nil, nil, errs.E("drive.PinVersion", errs.IsDir, n.Path, nil)
	}
	cs, err := d.meta.FileChunks(ctx, n.ID)
	if err != nil {
		return meta.Node{}, nil, nil, err
	}
	return n, cs, d.PinChunks(ctx, cs), nil
}

// PinChunks pins a version's chunks (recorded earlier, e.g. by PinVersion
// before a restart) until unpin is called.
func (d *Drive) PinChunks(ctx context.Context, cs []meta.FileChunk) (unpin func()) {
	for _, c := range cs {
		d.pins.Pin(ctx, dedup.Key(c.SHA256))
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, c := range cs {
				d.pins.Unpin(ctx, dedup.Key(c.SHA256))
			}
		})
	}
}

// OpenVersion opens a reader over a recorded version (its node and chunks,
// from PinVersion) whatever the file holds now. Close unpins.
func (d *Drive) OpenVersion(ctx context.Context, n meta.Node, cs []meta.FileChunk) *Reader {
	for _, c := range cs {
		d.pins.Pin(ctx, dedup.Key(c.SHA256))
	}
	return &Reader{d: d, ctx: ctx, node: n, chunks: cs, curIdx: -1}
}
