package mount_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"netdisk/mount"
	"netdisk/testutil"
)

// A chunk written to the cache folder does not also fill the page cache
// (the reader already holds it in memory and in the mounted file's pages):
// a chunk of whole blocks is written with O_DIRECT and none of its pages is
// resident afterwards; a file's odd-sized last chunk is written as usual.
// Both read back as written, from a new cache over the folder too.
func TestCacheWriteSkipsPageCache(t *testing.T) {
	dir := directIODir(t)
	c, err := mount.OpenChunkCache(dir, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	whole := testutil.RandBytes(4 << 20)
	tail := testutil.RandBytes(100_003)
	refs := map[string][]byte{}
	for _, data := range [][]byte{whole, tail} {
		sum := sha256.Sum256(data)
		ref := mount.ChunkRef{Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
		if err := c.Put(ref, ref.SHA256, data); err != nil {
			t.Fatal(err)
		}
		refs[ref.SHA256] = data
	}
	c.Wait()
	wholeKey := sha256.Sum256(whole)
	if n := residentPages(t, filepath.Join(dir, hex.EncodeToString(wholeKey[:]))); n != 0 {
		t.Errorf("%d pages of a cached 4 MiB chunk are in the page cache, want none (written through it, not directly)", n)
	}
	again, err := mount.OpenChunkCache(dir, 64<<20) // reads the files, checked
	if err != nil {
		t.Fatal(err)
	}
	for key, data := range refs {
		got := make([]byte, len(data))
		ref := mount.ChunkRef{Size: int64(len(data)), SHA256: key}
		if n, ok := again.ReadAt(ref, key, got, 0); !ok || n != len(data) || !bytes.Equal(got, data) {
			t.Errorf("chunk of %d bytes: read %d bytes back from the folder (ok %v), or other bytes", len(data), n, ok)
		}
	}
}

// directIODir is an empty cache folder on a filesystem that takes O_DIRECT:
// under the test's temp folder, or, when that is a tmpfs (which refuses it),
// beside the package's sources, which sit on a disk. Neither taking it
// fails the test under CI (skips elsewhere): the machine cannot show what
// the test checks.
func directIODir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if directIOSupported(t, dir) {
		return dir
	}
	dir, err := os.MkdirTemp(".", ".direct-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if directIOSupported(t, dir) {
		return dir
	}
	if testutil.InCI() {
		t.Fatal("neither the temp folder nor the source folder takes O_DIRECT: the test cannot check the cache's writes here")
	}
	t.Skip("no folder here takes O_DIRECT (tmpfs?): the cache writes as usual there")
	return ""
}

func directIOSupported(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, ".probe"), os.O_CREATE|os.O_WRONLY|unix.O_DIRECT, 0o600)
	if errors.Is(err, unix.EINVAL) {
		return false
	} else if err != nil {
		t.Fatal(err)
	}
	f.Close()
	os.Remove(f.Name())
	return true
}

// residentPages counts the pages of file p in the page cache (mincore).
func residentPages(t *testing.T, p string) int {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(info.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
