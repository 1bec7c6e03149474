package meta

import (
	"context"
	"database/sql"
	"errors"

	"netdisk/errs"
)

// ACMECache is the store of the ACME certificates the nodes sharing this
// store share (daemon/acme.go): opaque entries by name, as autocert's
// cache names them. Values are small (a certificate chain and its key, a
// few KiB).
type ACMECache interface {
	// ACMECacheGet returns the entry's data (NotFound when there is none).
	ACMECacheGet(ctx context.Context, name string) ([]byte, error)
	// ACMECachePut stores data under name, replacing what was there.
	ACMECachePut(ctx context.Context, name string, data []byte) error
	// ACMECacheDelete removes the entry; a missing one is success.
	ACMECacheDelete(ctx context.Context, name string) error
}

// ACMECacheGet reads one entry (ACMECache).
func (s *SQLStore) ACMECacheGet(ctx context.Context, name string) ([]byte, error) {
	const op = "meta.ACMECacheGet"
	var data []byte
	err := s.r.QueryRowContext(ctx, `SELECT data FROM acme_cache WHERE name = ?`, name).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errs.E(op, errs.NotFound, "", errors.New("no such ACME cache entry"))
	}
	return data, wrap(op, "", err)
}

// ACMECachePut writes one entry (ACMECache).
func (s *SQLStore) ACMECachePut(ctx context.Context, name string, data []byte) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO acme_cache (name, data) VALUES (?, ?)
		ON CONFLICT (name) DO UPDATE SET data = excluded.data`, name, data)
	return wrap("meta.ACMECachePut", "", err)
}

// ACMECacheDelete removes one entry (ACMECache).
func (s *SQLStore) ACMECacheDelete(ctx context.Context, name string) error {
	_, err := s.w.ExecContext(ctx, `DELETE FROM acme_cache WHERE name = ?`, name)
	return wrap("meta.ACMECacheDelete", "", err)
}
