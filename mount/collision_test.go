package mount_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/mount"
	"netdisk/testutil"
)

// cp into the mount stores the bytes copied, never other content sharing
// their MD5s. A = a‖S and B = b‖S (testdata/md5collision) share size, chunk
// MD5s and file hash; with B held by the mount's user or by another user
// (shared mode), copying A (large enough for the chunked upload and the
// chunks sent ahead while writing) leaves A on the server, with and without
// --write-back; copying B again sends no chunk bytes.
func TestCpMD5CollisionStoresWhatWasCopied(t *testing.T) {
	for _, wb := range []bool{false, true} {
		t.Run(map[bool]string{false: "sync", true: "write-back"}[wb], func(t *testing.T) {
			e := setupDaemon(t, []string{"--instant-upload=shared"}, func(o *mount.Options) { o.WriteBack = wb })
			ctx := context.Background()
			admin := client.New(e.d.URL, "admin", e.d.AdminPass)
			if _, err := admin.AdminAddUser(ctx, apitype.NewUser{Name: "bob", Password: "bob-pass"}); err != nil {
				t.Fatal(err)
			}
			holders := map[string]*client.Client{"alice": e.c, "bob": client.New(e.d.URL, "bob", "bob-pass")}
			src := t.TempDir()
			for _, who := range []string{"bob", "alice"} {
				// 5 chunks and a bit: over the mount's one-request limit.
				A, B := testutil.MD5CollidingContents(t, 5*testChunk+99)
				if _, err := holders[who].PushContent(ctx, bytes.NewReader(B), int64(len(B)), "/b-"+who+".bin", client.PushOptions{}); err != nil {
					t.Fatal(err)
				}
				a := filepath.Join(src, "a-"+who)
				if err := os.WriteFile(a, A, 0o644); err != nil {
					t.Fatal(err)
				}
				e.sh(`cp ` + a + ` "$M/a-` + who + `.bin" && sync "$M/a-` + who + `.bin"`)
				serverHolds(t, e, "/a-"+who+".bin", "alice", "alice-pass", A)
				if got := mustRead(t, filepath.Join(e.mnt, "a-"+who+".bin")); !bytes.Equal(got, A) {
					t.Fatalf("the mount reads other bytes at a-%s.bin", who)
				}
				if who == "alice" {
					b := filepath.Join(src, "b")
					os.WriteFile(b, B, 0o644)
					before := metric(t, e.d, "netdisk_http_bytes_in_total")
					e.sh(`cp ` + b + ` "$M/b-again.bin" && sync "$M/b-again.bin"`)
					if sent := metric(t, e.d, "netdisk_http_bytes_in_total") - before; sent >= testChunk {
						t.Errorf("copying B, which alice holds, sent %v bytes", sent)
					}
					serverHolds(t, e, "/b-again.bin", "alice", "alice-pass", B)
				}
			}
		})
	}
}
