package meta_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"netdisk/meta"
	"netdisk/meta/metatest"
)

// The SQLite store passes the conformance suite on a real database file.
func TestSQLiteConformance(t *testing.T) {
	metatest.Run(t, func(t *testing.T, now func() time.Time) meta.Store {
		s, err := meta.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "meta.db"), now)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
