package meta_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"netdisk/meta"
	"netdisk/vpath"
)

func TestNumberedName(t *testing.T) {
	for _, c := range []struct {
		name string
		i    int
		want string
	}{
		{"a.txt", 1, "a.txt"},
		{"a.txt", 2, "a (2).txt"},
		{"archive.tar.gz", 3, "archive.tar (3).gz"},
		{".bashrc", 2, ".bashrc (2)"},
		{"noext", 10, "noext (10)"},
	} {
		if got := meta.NumberedName(c.name, c.i); got != c.want {
			t.Errorf("NumberedName(%q, %d) = %q, want %q", c.name, c.i, got, c.want)
		}
	}
	// A name at the limit stays within it, cut on a character boundary.
	for _, name := range []string{strings.Repeat("é", 127) + ".x", strings.Repeat("a", 250) + ".txt", "a." + strings.Repeat("b", 253)} {
		for _, i := range []int{2, 999} {
			got := meta.NumberedName(name, i)
			if len(got) > vpath.MaxNameLen || !utf8.ValidString(got) || !strings.Contains(got, " (") {
				t.Errorf("NumberedName(%d bytes, %d) = %q (%d bytes)", len(name), i, got, len(got))
			}
		}
	}
}
