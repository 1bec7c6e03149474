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

// The name search case again with the SQLite store's other ways to a page:
// with the suite's few nodes the index's candidates are always few enough
// to sort, so the walk in time order (taken for a common pattern) and the
// walk that gives up and turns to the index run only when told to.
func TestSQLiteNameSearchWalks(t *testing.T) {
	for _, c := range []struct {
		name        string
		probe, scan int
	}{{"Walk", 0, 1 << 20}, {"WalkThenIndex", 0, 1}} {
		t.Run(c.name, func(t *testing.T) {
			metatest.RunNameSearch(t, func(t *testing.T, now func() time.Time) meta.Store {
				s, err := meta.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "meta.db"), now)
				if err != nil {
					t.Fatal(err)
				}
				meta.SetSearchTuning(s, c.probe, c.scan)
				return s
			})
		})
	}
}

// Two SQLite stores on one file (two processes on one data directory) keep
// the rules that span stores.
func TestSQLiteShared(t *testing.T) {
	metatest.RunShared(t, func(t *testing.T, now func() time.Time) (meta.Store, meta.Store) {
		path := filepath.Join(t.TempDir(), "meta.db")
		return openPair(t, func() (meta.Store, error) { return meta.OpenSQLite(context.Background(), path, now) })
	})
}

// openPair opens two stores with open (two nodes on one database); the
// first is closed again if the second fails.
func openPair(t *testing.T, open func() (meta.Store, error)) (meta.Store, meta.Store) {
	t.Helper()
	a, err := open()
	if err != nil {
		t.Fatal(err)
	}
	b, err := open()
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	return a, b
}
