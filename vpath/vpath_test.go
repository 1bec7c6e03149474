package vpath

import (
	"errors"
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	ok := map[string]string{"": "/", "/": "/", "a": "/a", "/a/b/": "/a/b", "//a//b": "/a/b", "/a/./b": "/a/b", "/ü/日本": "/ü/日本"}
	for in, want := range ok {
		got, err := Clean(in)
		if err != nil || got != want {
			t.Errorf("Clean(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := []string{"/..", "/a/../..", "../x", "/a/\x00b", "/a\nb", "/\xff", "/" + strings.Repeat("x", 256), strings.Repeat("/abc", 1100)}
	for _, in := range bad {
		if _, err := Clean(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("Clean(%q) err = %v, want ErrInvalid", in, err)
		}
	}
}

func TestIsBelow(t *testing.T) {
	if !IsBelow("/a/b", "/a") || IsBelow("/ab", "/a") || IsBelow("/a", "/a") || !IsBelow("/a", "/") {
		t.Fatal("IsBelow wrong")
	}
}

func TestCleanRel(t *testing.T) {
	ok := map[string]string{"": "", "/": "", "//": "", "a": "a", "/a/b/": "a/b", "a/.b/c..": "a/.b/c..", "ü/日本": "ü/日本",
		strings.Repeat("x", MaxRelLen): strings.Repeat("x", MaxRelLen)}
	for in, want := range ok {
		got, err := CleanRel(in)
		if err != nil || got != want {
			t.Errorf("CleanRel(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := []string{"..", "/../x", "a/..", "a/./b", ".", "a//b", "a/\x00", strings.Repeat("x", MaxRelLen+1)}
	for _, in := range bad {
		if got, err := CleanRel(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("CleanRel(%q) = %q, %v; want ErrInvalid", in, got, err)
		}
	}
}
