package meta

import (
	"context"
	"errors"
	"testing"
)

// TestScanAll: every row in order; a row's scan error, or the query's,
// comes back as the error with no rows; the rows are closed either way (the
// one-connection reader would otherwise hang the next query).
func TestScanAll(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	s.r.SetMaxOpenConns(1)
	q := `SELECT value FROM (SELECT 1 AS value UNION ALL SELECT 2 UNION ALL SELECT 3) ORDER BY value`
	scanInt := func(r rowScanner) (int, error) {
		var v int
		err := r.Scan(&v)
		return v, err
	}
	rows, err := s.r.QueryContext(ctx, q)
	got, err := scanAll(rows, err, scanInt)
	if err != nil || len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Fatalf("got %v, %v; want [1 2 3]", got, err)
	}
	boom := errors.New("boom")
	rows, err = s.r.QueryContext(ctx, q)
	got, err = scanAll(rows, err, func(r rowScanner) (int, error) {
		v, err := scanInt(r)
		if v == 2 {
			return 0, boom
		}
		return v, err
	})
	if !errors.Is(err, boom) || got != nil {
		t.Fatalf("got %v, %v; want no rows and boom", got, err)
	}
	// The rows of the failed scan were closed: the one connection is free.
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT 7`).Scan(&n); err != nil || n != 7 {
		t.Fatalf("next query: %d, %v", n, err)
	}
	got, err = scanAll(nil, boom, scanInt)
	if !errors.Is(err, boom) || got != nil {
		t.Fatalf("query error: got %v, %v", got, err)
	}
}
