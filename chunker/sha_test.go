package chunker

import (
	"bytes"
	"context"
	"sync"
	"testing"
)

// shaRemote records the SHA-256 names the pipeline gives with each call.
type shaRemote struct {
	*memRemote
	mu     sync.Mutex
	chunks map[int]string
	files  []FileSum
}

func (r *shaRemote) PatchChunk(ctx context.Context, c Chunk) (Check, error) {
	r.mu.Lock()
	r.chunks[c.Index] = c.SHA256
	r.mu.Unlock()
	return r.memRemote.PatchChunk(ctx, c)
}

func (r *shaRemote) PatchFile(ctx context.Context, f FileSum) (Check, error) {
	r.mu.Lock()
	r.files = append(r.files, f)
	r.mu.Unlock()
	return r.memRemote.PatchFile(ctx, f)
}

func (r *shaRemote) Merge(ctx context.Context, f FileSum) error {
	r.mu.Lock()
	r.files = append(r.files, f)
	r.mu.Unlock()
	return r.memRemote.Merge(ctx, f)
}

// Every chunk is offered with the SHA-256 of its bytes and the file with
// FileSHA256 of those, whether the pipeline hashes the file itself or is
// given the chunks' sums: the remote binds content it holds only by them.
func TestPipelineNamesContentBySHA256(t *testing.T) {
	data := randomData(21, 3500)
	var sums []Sum
	for off := 0; off < len(data); off += 1000 {
		sums = append(sums, HashChunk(data[off:min(off+1000, len(data))]))
	}
	var shas []string
	for _, s := range sums {
		shas = append(shas, s.SHA256)
	}
	want := FileSum{Hash: FileHash([]string{sums[0].MD5, sums[1].MD5, sums[2].MD5, sums[3].MD5}), SHA256: FileSHA256(shas)}
	for _, given := range []bool{false, true} {
		r := &shaRemote{memRemote: newMemRemote(), chunks: map[int]string{}}
		o := Options{ChunkSize: 1000}
		if given {
			o.Sums = sums
		}
		if _, err := Upload(context.Background(), bytes.NewReader(data), int64(len(data)), r, o); err != nil {
			t.Fatal(err)
		}
		for i, s := range sums {
			if r.chunks[i] != s.SHA256 {
				t.Errorf("given %v: chunk %d offered with sha256 %q, want %s", given, i, r.chunks[i], s.SHA256)
			}
		}
		if len(r.files) != 2 || r.files[0] != want || r.files[1] != want {
			t.Errorf("given %v: file calls named %+v, want %+v (patchHash, merge)", given, r.files, want)
		}
	}
}
