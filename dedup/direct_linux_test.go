package dedup

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

// TestWriteDirect: an aligned buffer goes out with O_DIRECT (its prefix)
// plus a buffered tail and reads back whole; one that cannot (misaligned in
// memory, shorter than a block) is refused with nothing written, so the
// caller's buffered write starts from an empty file. On a file system
// without O_DIRECT every write is refused that way.
func TestWriteDirect(t *testing.T) {
	dir := t.TempDir()
	raw := make([]byte, 3*directAlign+directAlign)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	off := (directAlign - int(uintptr(unsafe.Pointer(&raw[0]))%directAlign)) % directAlign
	aligned := raw[off : off+2*directAlign+123]
	cases := []struct {
		name string
		b    []byte
		can  bool // direct possible where the file system allows it
	}{
		{"blocks", aligned[:2*directAlign], true},
		{"blocks and a tail", aligned, true},
		{"shorter than a block", aligned[:100], false},
		{"misaligned memory", aligned[1 : 1+directAlign], false},
	}
	fsDirect := false
	for i, c := range cases {
		f, err := os.Create(filepath.Join(dir, c.name))
		if err != nil {
			t.Fatal(err)
		}
		done, err := writeDirect(f, c.b)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if done && !c.can {
			t.Errorf("%s: written directly", c.name)
		}
		if i == 0 {
			fsDirect = done
		} else if c.can && done != fsDirect {
			t.Errorf("%s: direct %v, the first aligned write %v", c.name, done, fsDirect)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		got, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case done && !bytes.Equal(got, c.b):
			t.Errorf("%s: read back %d bytes, not the %d written", c.name, len(got), len(c.b))
		case !done && len(got) != 0:
			t.Errorf("%s: refused, yet the file holds %d bytes", c.name, len(got))
		}
	}
	t.Logf("O_DIRECT on %s: %v", dir, fsDirect)
}
