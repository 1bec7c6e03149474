package upload

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"netdisk/errs"
	"netdisk/testutil"
)

// TestPooledChunkBuffers runs chunks large enough for the reused body buffers
// (pooledMin) through PutChunk: refused bodies (short, long, wrong hash) in
// between good ones, and several sessions at once, and every file reads back
// as sent: nothing of a buffer's previous chunk reaches a later one.
func TestPooledChunkBuffers(t *testing.T) {
	const cs = pooledMin
	e := newEnvSized(t, cs, nil)
	s, ctx := e.s, context.Background()
	uid := e.user("alice", 0)
	put := func(id string, i int64, hash string, body io.Reader, length int64) error {
		return s.PutChunk(ctx, uid, id, i, hash, body, length)
	}
	send := func(path string, b []byte, refusals bool) error {
		info, err := s.Init(ctx, uid, path, int64(len(b)), "")
		if err != nil {
			return err
		}
		for i := range info.TotalChunks {
			c := b[i*cs : min((i+1)*cs, int64(len(b)))]
			if refusals {
				// Each refused body leaves its bytes in a buffer the
				// good one may get next.
				junk := testutil.RandBytes(cs + 1)
				if err := put(info.UploadID, i, testutil.MD5Hex(c), bytes.NewReader(junk[:len(c)-1]), -1); !errs.Is(err, errs.Invalid) {
					return fmt.Errorf("chunk %d, body one byte short: %v, want Invalid", i, err)
				}
				if err := put(info.UploadID, i, testutil.MD5Hex(c), bytes.NewReader(append(append([]byte{}, c...), 'x')), -1); !errs.Is(err, errs.TooLarge) {
					return fmt.Errorf("chunk %d, body one byte long: %v, want TooLarge", i, err)
				}
				if err := put(info.UploadID, i, testutil.MD5Hex(c), bytes.NewReader(junk[:len(c)]), -1); !errs.Is(err, errs.Invalid) {
					return fmt.Errorf("chunk %d, other bytes: %v, want Invalid", i, err)
				}
			}
			// Small reads, as a slow connection gives them.
			if err := put(info.UploadID, i, testutil.MD5Hex(c), io.LimitReader(&trickle{r: bytes.NewReader(c)}, int64(len(c))), int64(len(c))); err != nil {
				return fmt.Errorf("chunk %d: %w", i, err)
			}
		}
		_, err = s.Merge(ctx, uid, info.UploadID, fileHash(b, cs), "")
		return err
	}
	check := func(path string, want []byte) {
		t.Helper()
		if got := e.read(uid, path); !bytes.Equal(got, want) {
			t.Errorf("%s: read back %d bytes that differ from the %d sent", path, len(got), len(want))
		}
	}

	one := testutil.RandBytes(3*cs - 100)
	if err := send("/one", one, true); err != nil {
		t.Fatal(err)
	}
	check("/one", one)

	files := make([][]byte, 4)
	var wg sync.WaitGroup
	errc := make(chan error, len(files))
	for k := range files {
		files[k] = testutil.RandBytes(2*cs + k)
		wg.Go(func() { errc <- send(fmt.Sprintf("/p%d", k), files[k], k%2 == 0) })
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	for k, b := range files {
		check(fmt.Sprintf("/p%d", k), b)
	}
}

// trickle reads at most 7000 bytes at a time.
type trickle struct{ r io.Reader }

func (t *trickle) Read(p []byte) (int, error) { return t.r.Read(p[:min(len(p), 7000)]) }
