package mount_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/testutil"
)

// Bob's mount of shares of alice's: a read-only share reads and refuses
// writes with EROFS; a writable one takes bob's writes into alice's tree;
// a rename out of a share moves the file (the drive takes its chunk
// references and deletes alice's into her trash), one out of a read-only
// share is EROFS.
func TestMountShares(t *testing.T) {
	testutil.RequireTool(t, "fusermount3")
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	ctx := context.Background()
	admin := client.New(d.URL, "admin", d.AdminPass)
	for _, u := range []string{"alice", "bob"} {
		if _, err := admin.AdminAddUser(ctx, apitype.NewUser{Name: u, Password: u + "-pass"}); err != nil {
			t.Fatal(err)
		}
	}
	alice := client.New(d.URL, "alice", "alice-pass")
	big := testutil.RandBytes(3*testChunk + 5)
	for p, body := range map[string][]byte{"/ro/f.txt": []byte("read me"), "/rw/g.bin": big} {
		if _, err := alice.Upload(ctx, p, strings.NewReader(string(body)), int64(len(body))); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []apitype.NewUserShare{{Path: "/ro", User: "bob"}, {Path: "/rw", User: "bob", Write: true}} {
		if _, err := alice.ShareWith(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{t: t, d: d, c: client.New(d.URL, "bob", "bob-pass")}
	e.mount()
	m := e.mnt

	if b, err := os.ReadFile(filepath.Join(m, "ro", "f.txt")); err != nil || string(b) != "read me" {
		t.Fatalf("read through a read-only share: %q %v", b, err)
	}
	for what, err := range map[string]error{
		"create":     os.WriteFile(filepath.Join(m, "ro", "new.txt"), []byte("x"), 0o644),
		"mkdir":      os.Mkdir(filepath.Join(m, "ro", "d"), 0o755),
		"unlink":     os.Remove(filepath.Join(m, "ro", "f.txt")),
		"rename":     os.Rename(filepath.Join(m, "ro", "f.txt"), filepath.Join(m, "ro", "h.txt")),
		"rename out": os.Rename(filepath.Join(m, "ro", "f.txt"), filepath.Join(m, "f.txt")),
	} {
		if !errorsIs(err, syscall.EROFS) {
			t.Errorf("%s in a read-only share: %v, want EROFS", what, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(m, "rw", "g.bin")); err != nil || string(b) != string(big) {
		t.Fatalf("read through a writable share: %d bytes, %v", len(b), err)
	}
	if err := os.WriteFile(filepath.Join(m, "rw", "from-bob.txt"), []byte("hello alice"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := alice.Stat(ctx, "/rw/from-bob.txt"); err != nil || n.Size != int64(len("hello alice")) {
		t.Fatalf("alice's view of bob's write: %+v %v", n, err)
	}
	if err := os.Rename(filepath.Join(m, "rw", "g.bin"), filepath.Join(m, "mine.bin")); err != nil {
		t.Fatalf("rename out of a share: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(m, "mine.bin")); err != nil || string(b) != string(big) {
		t.Fatalf("rename out of the share: %d bytes, %v", len(b), err)
	}
	if _, err := alice.Stat(ctx, "/rw/g.bin"); client.StatusOf(err) != 404 {
		t.Fatalf("alice's file after bob's mv out: %v", err)
	}
}
