package cachefile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestPublish: the data stands at dst with the identity Publish returned,
// and the temporary name is gone.
func TestPublish(t *testing.T) {
	dir := t.TempDir()
	tmp, err := os.CreateTemp(dir, "*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "entry")
	data := []byte("chunk bytes")
	info, err := Publish(tmp, data, dst)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(dst); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("dst holds %q, %v; want %q", got, err, data)
	}
	st, err := os.Stat(dst)
	if err != nil || !os.SameFile(st, info) || info.Size() != int64(len(data)) {
		t.Fatalf("returned info %v (size %d) is not the file at dst (%v)", info, info.Size(), err)
	}
	if _, err := os.Stat(tmp.Name()); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
}

// TestPublishFailureRemovesTemp: a rename that cannot happen (dst's folder
// is gone) returns the error, leaves nothing at dst and removes the
// temporary file.
func TestPublishFailureRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	tmp, err := os.CreateTemp(dir, "*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "missing", "entry")
	if _, err := Publish(tmp, []byte("x"), dst); err == nil {
		t.Fatal("Publish into a missing folder succeeded")
	}
	if _, err := os.Stat(tmp.Name()); !os.IsNotExist(err) {
		t.Fatalf("temporary file left after failure: %v", err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("dst exists after failure: %v", err)
	}
}
