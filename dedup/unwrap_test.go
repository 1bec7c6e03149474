package dedup_test

import (
	"testing"

	"netdisk/dedup"
)

// wrapped is a decorator as the drive writes them: it adds nothing here but
// names the store it wraps.
type wrapped struct{ dedup.BlobStore }

func (w wrapped) Unwrap() dedup.BlobStore { return w.BlobStore }

// A read cache's read-ahead is found through any number of wrappers; a store
// without one is not mistaken for one.
func TestAsPrefetcherSeesThroughWrappers(t *testing.T) {
	disk, err := dedup.NewDiskStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := dedup.NewCache(disk, dedup.CacheConfig{Dir: t.TempDir(), Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for depth, s := range []dedup.BlobStore{c, wrapped{c}, wrapped{wrapped{c}}} {
		p, ok := dedup.AsPrefetcher(s)
		if !ok || p != dedup.Prefetcher(c) {
			t.Fatalf("depth %d: AsPrefetcher = %v, %v; want the cache", depth, p, ok)
		}
	}
	for depth, s := range []dedup.BlobStore{disk, wrapped{disk}, nil} {
		if _, ok := dedup.AsPrefetcher(s); ok {
			t.Fatalf("depth %d: a disk store found as a Prefetcher", depth)
		}
	}
}
