package client

import (
	"os"
	"path/filepath"
	"testing"
)

// placeInRoot never writes outside the agent's root: not through a symlinked
// directory, not through ".."; a good target gets the bytes and no temp
// file is left behind.
func TestPlaceInRootStaysInside(t *testing.T) {
	base := t.TempDir()
	rootDir, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{rootDir, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(rootDir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "target"), filepath.Join(rootDir, "file-link")); err != nil {
		t.Fatal(err)
	}
	cached := filepath.Join(base, "cached")
	if err := os.WriteFile(cached, []byte("payload"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, rel := range []string{"escape/f", "escape/sub/f", "../outside/f", "a/../../outside/f"} {
		if err := placeInRoot(root, cached, rel); err == nil {
			t.Errorf("%s: placed, want a refusal", rel)
		}
	}
	// Renaming over a symlink replaces the link itself, never its target.
	if err := placeInRoot(root, cached, "file-link"); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("%d entries written outside the root", len(ents))
	}
	if err := placeInRoot(root, cached, "in/dir/f"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(rootDir, "in/dir/f")); err != nil || string(b) != "payload" {
		t.Fatalf("placed file: %q %v", b, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(rootDir, "in/dir")); len(ents) != 1 {
		t.Fatalf("target dir holds %d entries, want the file alone", len(ents))
	}
}
