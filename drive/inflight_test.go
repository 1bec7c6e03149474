package drive_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"netdisk/dedup"
	"netdisk/drive"
	"netdisk/drive/drivetest"
)

// gatedStore is the real disk store whose Puts wait until the gate opens,
// counting those waiting: chunks held by the drive between body and disk.
type gatedStore struct {
	dedup.BlobStore
	gate    chan struct{}
	waiting atomic.Int64
}

func (g *gatedStore) Put(ctx context.Context, k dedup.Key, b []byte) error {
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.BlobStore.Put(ctx, k, b)
}

// Parallel uploads share one budget of chunks in flight: however many
// upload at once, the drive holds at most inFlightChunks per hashing worker
// full chunks between the bodies and the disk (plus each upload's one being
// filled), so memory does not grow with the number of uploads. Eight
// uploads write into a store that holds every Put until all eight senders
// are blocked waiting for room; the chunks then held are counted.
func TestUploadsShareChunkBudget(t *testing.T) {
	const (
		chunk   = 64 << 10
		uploads = 8
		workers = 2
		budget  = 4 * workers // drive.inFlightChunks per worker
		each    = 2 * budget  // chunks per upload: more than the budget
	)
	e := drivetest.New(t, drivetest.Options{ChunkSize: chunk})
	u := e.AddUser(t, "alice", 0)
	g := &gatedStore{BlobStore: e.Blobs, gate: make(chan struct{})}
	d := drive.New(drive.Config{Meta: e.Meta, Blobs: g, Quota: e.Quota, ChunkSize: chunk, HashWorkers: workers})
	ctx := context.Background()
	var wg sync.WaitGroup
	errc := make(chan error, uploads)
	for i := range uploads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := d.Create(ctx, u.ID, fmt.Sprintf("/f%d", i), drive.WriteOptions{ExpectedSize: -1})
			if err != nil {
				errc <- err
				return
			}
			b := make([]byte, chunk)
			for c := range each {
				b[0], b[1] = byte(i), byte(c) // every chunk new content
				if _, err := w.Write(b); err != nil {
					w.Abort()
					errc <- err
					return
				}
			}
			if _, err := w.Commit(); err != nil {
				errc <- err
			}
		}()
	}
	// Every sender ends up waiting for room (dispatch), the chunks it
	// dispatched before held by the closed gate: a state none leaves
	// while the gate is closed.
	for blockedSenders() < uploads {
		runtime.Gosched()
	}
	held := g.waiting.Load()
	close(g.gate)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if held > budget {
		t.Errorf("%d uploads at once held %d full chunks for the store; want at most %d, whatever the number of uploads", uploads, held, budget)
	}
	for i := range uploads {
		if n, err := e.Drive.Stat(ctx, u.ID, fmt.Sprintf("/f%d", i)); err != nil || n.Size != each*chunk {
			t.Fatalf("/f%d after the gate opened: %+v, %v", i, n, err)
		}
	}
}

// blockedSenders counts goroutines blocked in Writer.dispatch waiting for
// a slot (or for one of the store's Puts to free one).
func blockedSenders() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "[select") && strings.Contains(g, "drive.(*Writer).dispatch") {
			count++
		}
	}
	return count
}
