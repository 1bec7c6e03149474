package client

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"netdisk/apitype"
	"netdisk/chunker"
	"netdisk/testutil"
)

// netdisk push never lets an MD5 match stand for its bytes. A = a‖S and
// B = b‖S (testdata/md5collision) share size, chunk MD5s and file hash:
// whoever holds B (the pusher, or another user in shared mode), pushing A
// in chunks or as a small file stores A, also into a session resumed with
// B's first chunk; pushing B again is still instant.
func TestPushMD5CollisionStoresWhatWasSent(t *testing.T) {
	d := startDaemon(t, "--instant-upload=shared")
	ctx := context.Background()
	admin := New(d.URL, "admin", d.AdminPass)
	for _, u := range []string{"alice", "bob"} {
		if _, err := admin.AdminAddUser(ctx, apitype.NewUser{Name: u, Password: u + "-pass-123"}); err != nil {
			t.Fatal(err)
		}
	}
	alice, bob := New(d.URL, "alice", "alice-pass-123"), New(d.URL, "bob", "bob-pass-123")
	dir := t.TempDir()
	n := 0
	write := func(b []byte) string {
		n++
		p := filepath.Join(dir, filepath.Base(t.Name())+string(rune('a'+n)))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	push := func(c *Client, b []byte, remote string, small bool) PushResult {
		t.Helper()
		o := PushOptions{SmallFileLimit: -1, Pipeline: fastRetries()}
		if small {
			o.SmallFileLimit = 0 // the server's: these files are under it
		}
		res, err := c.Push(ctx, write(b), remote, o)
		if err != nil {
			t.Fatalf("push %s: %v", remote, err)
		}
		return res
	}
	for _, small := range []bool{false, true} {
		for _, holder := range []*Client{alice, bob} {
			// 2 chunks and a bit, under the small-file limit.
			A, B := testutil.MD5CollidingContents(t, 2*testChunk+99)
			push(holder, B, "/b.bin", small)
			remote := "/a-" + holder.User
			if small {
				remote += "-small"
			}
			push(alice, A, remote, small)
			wantPulled(t, alice, remote, A)
			if holder == alice {
				if res := push(alice, B, remote+"-b", small); res.Instant != 1 {
					t.Errorf("pushing B again (small %v): %+v, want instant", small, res)
				}
				wantPulled(t, alice, remote+"-b", B)
			}
		}
	}
	// A session of B, interrupted after its first chunk, then a push of A
	// to the same path: the merge finds the bytes differ, the push starts
	// over and stores A.
	A, B := testutil.MD5CollidingContents(t, 2*testChunk+99)
	in, err := alice.Init(ctx, "/resumed.bin", int64(len(B)), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := alice.UploadChunk(ctx, in.UploadID, 0, chunker.ChunkMD5(B[:testChunk]), B[:testChunk]); err != nil {
		t.Fatal(err)
	}
	push(alice, A, "/resumed.bin", false)
	wantPulled(t, alice, "/resumed.bin", A)
}
