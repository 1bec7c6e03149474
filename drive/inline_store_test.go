package drive

import (
	"context"
	"path/filepath"
	"testing"

	"netdisk/dedup"
	"netdisk/meta"
)

// The inline wrapper keeps a read-ahead store's Prefetch visible (GETs over
// the S3 read cache look for it) and adds none to a store without one.
func TestInlineStoreKeepsPrefetch(t *testing.T) {
	ctx := context.Background()
	m, err := meta.OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	disk, err := dedup.NewDiskStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cache, err := dedup.NewCache(disk, dedup.CacheConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := inlineStore(cache, m).(dedup.Prefetcher); !ok {
		t.Fatal("the read cache's Prefetch is hidden by the inline wrapper")
	}
	if _, ok := inlineStore(disk, m).(dedup.Prefetcher); ok {
		t.Fatal("the disk store gained a Prefetch")
	}
}
