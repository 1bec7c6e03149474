package meta

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"netdisk/errs"
)

// pgKind classifies a PostgreSQL error the way dbKind classifies SQLite's
// (errors.go); ok is false for an error that is not PostgreSQL's.
func pgKind(err error) (errs.Kind, bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return errs.Exists, true
		case "53100": // disk_full
			return errs.NoSpace, true
		case "40001", "40P01", "55P03", "53300", "57P01", "57P03": // serialization, deadlock, lock timeout, too many connections, shutdown
			return errs.Unavailable, true
		}
		return errs.Other, true
	}
	// The server unreachable (connect refused, connection lost) is a busy
	// database in the operator's terms: try again.
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.SafeToRetry(err) {
		return errs.Unavailable, true
	}
	return errs.Other, false
}

func pgUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
