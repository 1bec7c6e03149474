package mount_test

import (
	"os"
	"path/filepath"
	"testing"

	"netdisk/testutil"
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
	des, err := os.ReadDir(dir) // sorted by name, as OddNames is
	if err != nil {
		t.Fatal(err)
	}
	if len(des) != len(names) {
		t.Fatalf("readdir lists %d entries, want %d", len(des), len(names))
	}
	for i, de := range des {
		if de.Name() != names[i] {
			t.Errorf("readdir entry %d is %q, want %q", i, de.Name(), names[i])
		}
		if b, err := os.ReadFile(filepath.Join(dir, names[i])); err != nil || string(b) != names[i] {
			t.Errorf("read %q: %q, %v", names[i], b, err)
		}
	}
}
