package dav

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An upload folder untouched since before the cutoff is removed with its
// parts; one whose newest part is recent stays, however old the folder.
func TestExpireUploads(t *testing.T) {
	root := t.TempDir()
	h := &Handler{UploadsDir: root}
	now := time.Unix(1_800_000_000, 0)
	old, recent := now.Add(-100*time.Hour), now.Add(-time.Hour)
	mk := func(id string, dirTime, partTime time.Time) string {
		dir := filepath.Join(root, "7", id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		part := filepath.Join(dir, "0000000000000000")
		if err := os.WriteFile(part, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(part, partTime, partTime); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dir, dirTime, dirTime); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	abandoned := mk("1", old, old)
	active := mk("2", old, recent)
	n, err := h.ExpireUploads(now.Add(-72 * time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("ExpireUploads = %d, %v; want 1", n, err)
	}
	if _, err := os.Stat(abandoned); !os.IsNotExist(err) {
		t.Fatalf("the abandoned upload is still there: %v", err)
	}
	if _, err := os.Stat(active); err != nil {
		t.Fatalf("the active upload was removed: %v", err)
	}
	if n, err := (&Handler{UploadsDir: filepath.Join(root, "none")}).ExpireUploads(now); err != nil || n != 0 {
		t.Fatalf("no uploads folder yet: %d, %v", n, err)
	}
}
