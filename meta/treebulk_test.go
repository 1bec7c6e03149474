package meta

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// subtreeWrite is a statement that writes the nodes of a whole subtree
// (subtree's condition, or all of the trash, appended to an UPDATE or a
// DELETE of nodes).
var subtreeWrite = regexp.MustCompile("(?i)(UPDATE|DELETE FROM) nodes\\b[^`]*`\\s*\\+\\s*(cond|LiveNodes)\\b")

// Every statement over a whole subtree runs through treeBulk: one that did
// not would fire the tree_seq triggers per row, each bump climbing to the
// root, and cost the subtree's rows times its depth. metatest's TreeSeq
// checks the paths there are; this keeps a new one from bypassing them.
func TestSubtreeWritesGoThroughTreeBulk(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "treebulk.go" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, m := range subtreeWrite.FindAllIndex(src, -1) {
			start := strings.LastIndexByte(string(src[:m[0]]), '\n') + 1
			if strings.Contains(string(src[start:m[0]]), "treeBulk(") {
				continue
			}
			line := 1 + strings.Count(string(src[:m[0]]), "\n")
			t.Errorf("%s:%d: a statement over a subtree outside treeBulk (moveRows, deleteRows, or treeBulk itself): %q", f, line, src[m[0]:m[1]])
		}
	}
	if checked == 0 {
		t.Fatal("no source files found")
	}
}
