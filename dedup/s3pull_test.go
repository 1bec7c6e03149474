package dedup_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"netdisk/dedup"
	"netdisk/lock"
	"netdisk/testutil"
)

// gatedStore counts the chunk reads one process makes of the remote store,
// and can hold them until the test opens the gate (so the other processes
// are seen waiting first) or fail the first one.
type gatedStore struct {
	dedup.BlobStore
	opens    atomic.Int64
	started  chan struct{} // closed by the first Open
	gate     chan struct{} // Open waits for it to close
	failOnce atomic.Bool
	once     sync.Once
}

func newGated(remote dedup.BlobStore) *gatedStore {
	return &gatedStore{BlobStore: remote, started: make(chan struct{}), gate: make(chan struct{})}
}

var errInjected = errors.New("injected fetch failure")

func (g *gatedStore) Open(ctx context.Context, k dedup.Key) (io.ReadSeekCloser, error) {
	g.opens.Add(1)
	g.once.Do(func() { close(g.started) })
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if g.failOnce.CompareAndSwap(true, false) {
		return nil, errInjected
	}
	return g.BlobStore.Open(ctx, k)
}

// node is one process sharing the cache directory: its own cache and its
// own lock manager, on the shared Redis.
type node struct {
	cache  *dedup.Cache
	remote *gatedStore
	locks  *lock.Manager
	id     lock.Node
}

func newNodes(t *testing.T, n int, remote dedup.BlobStore, dir string) ([]*node, *testutil.Redis) {
	t.Helper()
	r := testutil.StartRedis(t)
	var out []*node
	for i := range n {
		m, err := lock.NewManager(context.Background(), lock.Config{State: lock.NewRedis(r.Client(), "")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		g := newGated(remote)
		c, err := dedup.NewCache(g, dedup.CacheConfig{Dir: dir, Size: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		id := lock.Node{User: "nodes", ID: string(rune('a' + i))}
		c.SetPuller(lock.Puller{M: m, Scope: "cache:", Node: id})
		out = append(out, &node{cache: c, remote: g, locks: m, id: id})
	}
	return out, r
}

// waitQueued waits until nd waits in the chunk's pull queue at pos.
func waitQueued(t *testing.T, nd *node, k dedup.Key, pos int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := nd.locks.Inspect(context.Background(), lock.PullOp, "cache:"+string(k), nd.id)
		if err == nil && r.Status == lock.Queued && r.Position == pos {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s not queued at %d on the chunk's pull lock: %+v %v", nd.id.ID, pos, r, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readAll opens k through c readers times at once and checks the bytes.
func readAll(t *testing.T, c *dedup.Cache, k dedup.Key, want []byte, readers int, wg *sync.WaitGroup, errc chan<- error) {
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Open(context.Background(), k)
			if err != nil {
				errc <- err
				return
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if err == nil && !bytes.Equal(got, want) {
				err = errors.New("read bytes that are not the chunk")
			}
			errc <- err
		}()
	}
}

func coldChunk(t *testing.T, remote dedup.BlobStore) ([]byte, dedup.Key) {
	b := bytes.Repeat([]byte("cold chunk "), 20000)
	k := sha(b)
	if err := remote.Put(context.Background(), k, b); err != nil {
		t.Fatal(err)
	}
	return b, k
}

// Three processes sharing one cache directory and one Redis, each reading
// one cold chunk from eight goroutines at once, make one GET of it from
// S3: the first process's fetch is held until the other two are seen
// waiting in the chunk's pull queue, so without the pull lock all three
// would be fetching.
func TestSharedCacheOneFetch(t *testing.T) {
	remote := openS3(t)
	nodes, _ := newNodes(t, 3, remote, t.TempDir())
	b, k := coldChunk(t, remote)
	var wg sync.WaitGroup
	errc := make(chan error, 3*8)
	contend(t, nodes, k, b, 8, &wg, errc, &wg, errc)
	noErrors(t, &wg, errc)
	for i, want := range []int64{1, 0, 0} {
		if got := nodes[i].remote.opens.Load(); got != want {
			t.Errorf("process %d read the chunk from S3 %d times, want %d", i, got, want)
		}
	}
}

// contend starts readers on each node in turn: the first node's fetch
// starts (and is held), then each other node is seen queued behind it in
// order, then the fetches are let go. The first node's readers report to
// wg0/errc0, the others' to wg/errc.
func contend(t *testing.T, nodes []*node, k dedup.Key, b []byte, readers int, wg0 *sync.WaitGroup, errc0 chan error, wg *sync.WaitGroup, errc chan error) {
	t.Helper()
	readAll(t, nodes[0].cache, k, b, readers, wg0, errc0)
	<-nodes[0].remote.started
	for i, nd := range nodes[1:] {
		readAll(t, nd.cache, k, b, readers, wg, errc)
		waitQueued(t, nd, k, i+1)
	}
	for _, nd := range nodes {
		close(nd.remote.gate)
	}
}

// noErrors waits for the readers and fails on the first error one met.
func noErrors(t *testing.T, wg *sync.WaitGroup, errc chan error) {
	t.Helper()
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// The holder's fetch failing passes the lock to the head of the queue,
// which fetches; the process behind it is woken by that success and reads
// the file without fetching. The failing process's readers get its error.
func TestSharedCacheFailurePassesLock(t *testing.T) {
	remote := openS3(t)
	nodes, _ := newNodes(t, 3, remote, t.TempDir())
	b, k := coldChunk(t, remote)
	nodes[0].remote.failOnce.Store(true)
	var wg0, wg sync.WaitGroup
	errc0 := make(chan error, 4)
	errc := make(chan error, 2*4)
	contend(t, nodes, k, b, 4, &wg0, errc0, &wg, errc)
	wg0.Wait()
	close(errc0)
	for err := range errc0 {
		if !errors.Is(err, errInjected) {
			t.Fatalf("a reader of the failing holder: %v, want its fetch error", err)
		}
	}
	noErrors(t, &wg, errc)
	for i, want := range []int64{1, 1, 0} {
		if got := nodes[i].remote.opens.Load(); got != want {
			t.Errorf("process %d read the chunk from S3 %d times, want %d", i, got, want)
		}
	}
}

// A file another process put in the shared directory is a hit, and one it
// removed is a miss fetched again; the bound counts other processes' files.
func TestSharedCacheForeignFiles(t *testing.T) {
	ctx := context.Background()
	remote := openS3(t)
	dir := t.TempDir()
	b, k := coldChunk(t, remote)
	a, err := dedup.NewCache(remote, dedup.CacheConfig{Dir: dir, Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	gb := newGated(remote)
	close(gb.gate)
	bc, err := dedup.NewCache(gb, dedup.CacheConfig{Dir: dir, Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	read := func(c *dedup.Cache) {
		t.Helper()
		r, err := c.Open(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(r)
		r.Close()
		if !bytes.Equal(got, b) {
			t.Fatal("read bytes that are not the chunk")
		}
	}
	read(a) // a fetches it into the directory
	read(bc)
	if n := gb.opens.Load(); n != 0 {
		t.Fatalf("second process fetched %d times a chunk the first had cached", n)
	}
	if err := a.Delete(ctx, k); err != nil { // removes the object and the file
		t.Fatal(err)
	}
	if err := remote.Put(ctx, k, b); err != nil {
		t.Fatal(err)
	}
	read(bc) // its index still names the file: a miss, fetched
	if n := gb.opens.Load(); n != 1 {
		t.Fatalf("second process fetched %d times after the file was removed, want 1", n)
	}
	// Other processes' files count against the bound: a fills the
	// directory close to it, then b's stores take it past, and b evicts
	// enough (a's files included) to bring the directory back under it.
	fill := func(c *dedup.Cache, from int) {
		t.Helper()
		for i := from; i < from+4; i++ {
			ch := bytes.Repeat([]byte{byte(i)}, 200<<10)
			ck := sha(ch)
			if err := remote.Put(ctx, ck, ch); err != nil {
				t.Fatal(err)
			}
			r, err := c.Open(ctx, ck)
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
		}
	}
	fill(a, 0)
	fill(bc, 4)
	if used := dirBytes(t, dir); used > 1<<20 {
		t.Fatalf("shared directory holds %d bytes, bound 1 MiB", used)
	}
}

func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, de := range des {
		if fi, err := de.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// With the lock service out of reach, a miss fetches directly instead of
// failing the read.
func TestSharedCacheLockServiceDown(t *testing.T) {
	remote := openS3(t)
	nodes, r := newNodes(t, 1, remote, t.TempDir())
	b, k := coldChunk(t, remote)
	r.Kill()
	close(nodes[0].remote.gate)
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	readAll(t, nodes[0].cache, k, b, 2, &wg, errc)
	noErrors(t, &wg, errc)
	if n := nodes[0].remote.opens.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
}
