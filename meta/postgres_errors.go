package meta

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"netdisk/errs"
)

// pgKind classifies a PostgreSQL error the way dbKind classifies SQLite's
// (errors.go); ok is false for an error that is not PostgreSQL's.
//
// The server away (refused, lost or reset connections, a restart's
// "terminating connection" (57P01), a crash (57P02), "starting up" (57P03),
// any connection exception of class 08) is Unavailable: the request is
// right, the database will answer again. A client that went away stays a
// cancellation (dbKind decides that first).
func pgKind(err error) (errs.Kind, bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505": // unique_violation
			return errs.Exists, true
		case pe.Code == "53100": // disk_full
			return errs.NoSpace, true
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutdown, crash, starting up
			pe.Code == "40001", pe.Code == "40P01", // serialization failure, deadlock
			pe.Code == "55P03", pe.Code == "53300": // lock timeout, too many connections
			return errs.Unavailable, true
		}
		return errs.Other, true
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) || errors.As(err, &ne) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return errs.Unavailable, true
	}
	return errs.Other, false
}

func pgUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
