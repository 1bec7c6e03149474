package mount_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"netdisk/mount"
	"netdisk/testutil"
)

// stalledReads is the real backend, except that reads past the first chunk
// hang until their context ends, as on a stalled server.
type stalledReads struct {
	mount.Backend
	once    sync.Once
	started chan struct{} // closed by the first read that hangs
}

func (s *stalledReads) ReadRange(ctx context.Context, p, fileHash string, off int64, dest []byte) error {
	if off < testChunk {
		return s.Backend.ReadRange(ctx, p, fileHash, off, dest)
	}
	s.once.Do(func() { close(s.started) })
	<-ctx.Done()
	return ctx.Err()
}

// A mount closed while its prefetch of the chunks after a read hangs on
// the server (the fetches bounded by an OpTimeout far longer than the test)
// cancels the fetches and waits for them: none of its goroutines is left
// once Close returns.
func TestCloseEndsPrefetch(t *testing.T) {
	stalled := &stalledReads{started: make(chan struct{})}
	e := setup(t, func(o *mount.Options) {
		stalled.Backend = o.Backend
		o.Backend = stalled
		o.OpTimeout = 10 * time.Minute
	})
	e.put("f", bytes.Repeat([]byte("prefetched "), 4*testChunk/10)) // four chunks
	e.sh(`head -c 100 "$M/f" >/dev/null`)
	<-stalled.started
	if err := e.srv.Unmount(); err != nil {
		t.Fatal(err)
	}
	e.fsys.Close()
	testutil.NoGoroutines(t, "netdisk/mount.")
}
