package mount_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"netdisk/internal/testutil"
)

// TestOddNamesThroughMount: every odd name of testdata/names.txt (unicode,
// reserved characters, 255-byte names) is created, listed and read back
// through real syscalls on the mount.
func TestOddNamesThroughMount(t *testing.T) {
	e := setup(t)
	dir := filepath.Join(e.mnt, "odd")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	names := testutil.OddNames(t)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatalf("create %q: %v", name, err)
		}
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, de := range des {
		listed = append(listed, de.Name())
	}
	slices.Sort(listed)
	if !slices.Equal(listed, names) {
		t.Fatalf("readdir %q,\nwant %q", listed, names)
	}
	for _, name := range names {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != name {
			t.Errorf("read %q: %q, %v", name, b, err)
		}
	}
}
