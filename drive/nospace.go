package drive

import (
	"errors"
	"syscall"

	"github.com/mattn/go-sqlite3"

	"netdisk/errs"
)

// DiskFull gives a metadata error caused by a full disk the kind NoSpace
// (507 / ENOSPC at the edges): SQLite reports it as SQLITE_FULL, or as an
// I/O error carrying errno ENOSPC, neither of which wraps the errno that
// errs.KindOf recognises. Other errors are returned unchanged.
func DiskFull(op string, err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrFull || se.SystemErrno == syscall.ENOSPC) {
		return errs.E(op, errs.NoSpace, "", err)
	}
	return err
}
