package meta

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"

	"netdisk/errs"
)

// Database errors get their kinds in one place, whatever wrapped them on the
// way: a full disk is NoSpace (and its message names no server path), a busy
// database Unavailable, a taken name Exists; kinds already given are kept.
func TestErrorKinds(t *testing.T) {
	for _, c := range []struct {
		err  error
		want errs.Kind
	}{
		{fmt.Errorf("meta: commit /srv/netdisk/meta.db: %w", sqlite3.Error{Code: sqlite3.ErrFull}), errs.NoSpace},
		{fmt.Errorf("meta: %w", sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.ENOSPC}), errs.NoSpace},
		{errs.E("inner", errs.Other, "", sqlite3.Error{Code: sqlite3.ErrFull}), errs.NoSpace},
		{sqlite3.Error{Code: sqlite3.ErrBusy}, errs.Unavailable},
		{sqlite3.Error{Code: sqlite3.ErrLocked}, errs.Unavailable},
		{errors.New("database is locked"), errs.Unavailable},
		{sqlite3.Error{Code: sqlite3.ErrConstraint, ExtendedCode: sqlite3.ErrConstraintUnique}, errs.Exists},
		{errs.E("inner", errs.Quota, "", sqlite3.Error{Code: sqlite3.ErrFull}), errs.Quota},
		{context.Canceled, errs.Canceled},
		{errors.New("boom"), errs.Other},
		// PostgreSQL away: a restart, a crash, a lost or refused connection.
		{&pgconn.PgError{Code: "57P01"}, errs.Unavailable},
		{&pgconn.PgError{Code: "57P02"}, errs.Unavailable},
		{fmt.Errorf("query: %w", &pgconn.PgError{Code: "08006"}), errs.Unavailable},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, errs.Unavailable},
		{fmt.Errorf("receive: %w", io.ErrUnexpectedEOF), errs.Unavailable},
		{driver.ErrBadConn, errs.Unavailable},
		{&pgconn.PgError{Code: "42P01"}, errs.Other}, // undefined table: a bug
	} {
		got := wrap("meta.Test", "/p", c.err)
		if errs.KindOf(got) != c.want || !errs.Classified(got) {
			t.Errorf("wrap(%v): kind %v, want %v", c.err, errs.KindOf(got), c.want)
		}
		if c.want == errs.NoSpace && errs.Message(got) != errs.NoSpace.String() {
			t.Errorf("message %q names more than the kind", errs.Message(got))
		}
	}
	if wrap("x", "", nil) != nil {
		t.Fatal("wrap(nil) != nil")
	}
}
