package chunker

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
)

// restartRemote is a memRemote whose Merge reports ErrContentChanged and
// which can restart in a fresh session; the chunks of the session it leaves
// stay known by hash, as on the server.
type restartRemote struct {
	*memRemote
	held     map[string][]byte
	restarts int
}

func (r *restartRemote) PatchChunk(ctx context.Context, c Chunk) (Check, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.held[c.Hash]; ok {
		r.chunks[c.Index] = b
		return Check{Exists: true}, nil
	}
	return Check{}, nil
}

func (r *restartRemote) Merge(ctx context.Context, fh FileSum) error {
	if err := r.memRemote.Merge(ctx, fh); err != nil {
		return Permanent(fmt.Errorf("%w: %w", ErrContentChanged, err))
	}
	return nil
}

func (r *restartRemote) Restart(ctx context.Context, fh string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.restarts++
	for _, b := range r.chunks {
		r.held[ChunkMD5(b)] = b
	}
	r.chunks = map[int][]byte{}
	return nil
}

// A session resumed after the file changed: merge fails (MergeFailed, not a
// second QueueDrained), every chunk is checked again by hash in a fresh
// session, only the changed one is sent, and the file is merged.
func TestPipelineResumedAfterChangeRechecksByHash(t *testing.T) {
	old := randomData(14, 6000)
	data := slices.Clone(old)
	data[1500] ^= 0xff // chunk 1 changed since the session received it
	r := &restartRemote{memRemote: newMemRemote(), held: map[string][]byte{}}
	for _, i := range []int{0, 1, 2} {
		r.chunks[i] = old[i*1000 : (i+1)*1000]
	}
	rec := &recorder{t: t, n: 2}
	o := opts(rec, &noSleep{})
	o.Uploaded = func(i int) bool { return i <= 2 }
	res, err := Upload(context.Background(), bytes.NewReader(data), int64(len(data)), r, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.restarts != 1 || len(r.merged) != 1 || r.merged[0] != FileHash(chunkHashes(data, 1000)) {
		t.Fatalf("restarts %d, merged %v", r.restarts, r.merged)
	}
	if !maps.Equal(r.attempts, map[int]int{1: 1, 3: 1, 4: 1, 5: 1}) || res.Counters.BytesSent != 4000 {
		t.Fatalf("uploads per chunk %v, %d bytes sent; want 3, 4, 5 once (missing) and 1 once (changed)", r.attempts, res.Counters.BytesSent)
	}
	if rec.count(ChunkHashed) != 6 || rec.count(QueueDrained) != 1 || rec.count(MergeFailed) != 1 || rec.count(Merged) != 1 {
		t.Fatalf("events %v", rec.kinds())
	}
	if !(rec.index(QueueDrained) < rec.index(MergeFailed) && rec.index(MergeFailed) < rec.index(Merged)) {
		t.Fatalf("event order %v", rec.kinds())
	}
	if c := res.Counters; c.Completed != 6 || c.BytesSkipped != 5000 {
		t.Fatalf("counters after the re-check %+v", c)
	}

	// A remote that cannot restart: MergeFailed, and the run fails.
	m := newMemRemote()
	for _, i := range []int{0, 1, 2} {
		m.chunks[i] = old[i*1000 : (i+1)*1000]
	}
	rec = &recorder{t: t, n: 2}
	o = opts(rec, &noSleep{})
	o.Uploaded = func(i int) bool { return i <= 2 }
	if _, err := Upload(context.Background(), bytes.NewReader(data), int64(len(data)), m, o); err == nil || len(m.merged) != 0 {
		t.Fatalf("merge of changed content: err %v, merged %v", err, m.merged)
	}
	if rec.count(MergeFailed) != 1 || rec.count(Merged) != 0 {
		t.Fatalf("events %v", rec.kinds())
	}
}

func chunkHashes(b []byte, size int) []string {
	var hs []string
	for off := 0; off < len(b); off += size {
		hs = append(hs, ChunkMD5(b[off:min(off+size, len(b))]))
	}
	return hs
}
