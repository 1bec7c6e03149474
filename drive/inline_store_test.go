package drive

import (
	"context"
	"path/filepath"
	"testing"

	"netdisk/dedup"
	"netdisk/dedup/storetest"
	"netdisk/meta"
)

// The inline wrapper keeps a read-ahead store's Prefetch visible (GETs over
// the S3 read cache look for it, through dedup.AsPrefetcher) and adds none
// to a store without one; over either it passes the blob store suite,
// read-ahead included.
func TestInlineStoreKeepsPrefetch(t *testing.T) {
	ctx := context.Background()
	m, err := meta.OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	newDisk := func(t *testing.T) *dedup.DiskStore {
		disk, err := dedup.NewDiskStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return disk
	}
	newCache := func(t *testing.T) *dedup.Cache {
		cache, err := dedup.NewCache(newDisk(t), dedup.CacheConfig{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return cache
	}
	if _, ok := dedup.AsPrefetcher(inlineStore(newCache(t), m)); !ok {
		t.Fatal("the read cache's Prefetch is hidden by the inline wrapper")
	}
	if _, ok := dedup.AsPrefetcher(inlineStore(newDisk(t), m)); ok {
		t.Fatal("the disk store gained a Prefetch")
	}
	t.Run("OverCache", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) dedup.BlobStore { return inlineStore(newCache(t), m) })
	})
	t.Run("OverDisk", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) dedup.BlobStore { return inlineStore(newDisk(t), m) })
	})
}
