package mount_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"netdisk/mount"
	"netdisk/testutil"
)

// aheadGate is the real backend, except that the read of the first chunk
// waits until the server has been asked for the next want chunks: a mount
// that asks for them only after the first chunk arrived never gets it (its
// read ends at OpTimeout). It counts the reads of each offset.
type aheadGate struct {
	mount.Backend
	want int

	mu    sync.Mutex
	reads map[int64]int
	asked int           // distinct chunks after the first asked for
	ahead chan struct{} // closed when asked reaches want
}

func (g *aheadGate) ReadRange(ctx context.Context, p, fileHash string, off int64, dest []byte) error {
	g.mu.Lock()
	if g.reads[off]++; g.reads[off] == 1 && off >= testChunk {
		if g.asked++; g.asked == g.want {
			close(g.ahead)
		}
	}
	g.mu.Unlock()
	if off < testChunk {
		select {
		case <-g.ahead:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Backend.ReadRange(ctx, p, fileHash, off, dest)
}

// A cold sequential read asks the server for the chunks after the one it
// reads before it waits for that one, so they travel while it arrives and
// is checked; and however the kernel's reads and the prefetch meet, each
// chunk is fetched once.
func TestSequentialReadFetchesAhead(t *testing.T) {
	const prefetch = 4
	g := &aheadGate{want: prefetch, reads: map[int64]int{}, ahead: make(chan struct{})}
	e := setup(t, func(o *mount.Options) {
		g.Backend = o.Backend
		o.Backend = g
		o.Prefetch = prefetch
	})
	data := testutil.RandBytes(10*testChunk + 123)
	e.put("f", data)
	got := e.sh(`cat "$M/f"`)
	if !bytes.Equal([]byte(got), data) {
		t.Fatalf("read %d bytes, not the file's %d", len(got), len(data))
	}
	// Close waits for the prefetches still running: any second fetch is
	// counted by then.
	if err := e.srv.Unmount(); err != nil {
		t.Fatal(err)
	}
	e.fsys.Close()
	g.mu.Lock()
	defer g.mu.Unlock()
	for off := int64(0); off < int64(len(data)); off += testChunk {
		if n := g.reads[off]; n != 1 {
			t.Errorf("chunk at %d fetched %d times, want once", off, n)
		}
	}
}
