package meta_test

import (
	"context"
	"path/filepath"
	"testing"

	"netdisk/meta"
	"netdisk/meta/metatest"
)

func TestSQLiteAsyncConformance(t *testing.T) {
	metatest.RunAsync(t, func(t *testing.T) meta.AsyncJobs {
		s, err := meta.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "meta.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
