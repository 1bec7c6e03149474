package deptest_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"netdisk/testutil/deptest"
)

// Package meta is the only one that talks to the database: every other
// package composes metadata changes through meta's contract (meta.Tx for a
// transaction), so none of their non-test files imports database/sql. A
// test may still open the database file to look at or break it.
func TestOnlyMetaImportsDatabaseSQL(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if rel != "." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if rel != "." {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		imports, err := deptest.FileImports(path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		seen[rel] = len(imports) > 0
		if rel == "meta" {
			return nil
		}
		for _, p := range imports {
			if p == "database/sql" || strings.HasPrefix(p, "database/sql/") {
				t.Errorf("netdisk/%s imports %s: only package meta talks to the database (use meta's contract, meta.Tx for a transaction)", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"drive", "meta", "upload", "server"} {
		if !seen[p] {
			t.Fatalf("found no Go files in %s under %s", p, root)
		}
	}
}
