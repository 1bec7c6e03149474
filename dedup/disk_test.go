package dedup_test

import (
	"testing"

	"netdisk/dedup"
	"netdisk/dedup/storetest"
)

func TestDiskStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) dedup.BlobStore {
		s, err := dedup.NewDiskStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestPinsBlockDeletion(t *testing.T) {
	p := dedup.NewPins()
	k := dedup.Key("aa")
	p.Pin(k)
	ran, _ := p.IfUnpinned(k, func() error { return nil })
	if ran {
		t.Fatal("IfUnpinned ran on a pinned key")
	}
	p.Pin(k)
	p.Unpin(k)
	if ran, _ := p.IfUnpinned(k, func() error { return nil }); ran {
		t.Fatal("one pin is still held")
	}
	p.Unpin(k)
	if ran, _ := p.IfUnpinned(k, func() error { return nil }); !ran {
		t.Fatal("IfUnpinned did not run on an unpinned key")
	}
}
