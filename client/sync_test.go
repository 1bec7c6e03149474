package client

import (
	"slices"
	"testing"
)

// topmost keeps the roots of the trees a mirror deletes, whatever sorts
// between a directory and its children ("/a b" sorts before "/a/x").
func TestTopmost(t *testing.T) {
	got := topmost([]string{"/a/x", "/a b", "/a", "/c/d/e", "/c/d", "/a/x/y", "/f"})
	if want := []string{"/a", "/a b", "/c/d", "/f"}; !slices.Equal(got, want) {
		t.Fatalf("topmost = %v, want %v", got, want)
	}
	if got := topmost(nil); len(got) != 0 {
		t.Fatalf("topmost(nil) = %v", got)
	}
}
