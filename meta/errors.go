package meta

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"github.com/mattn/go-sqlite3"

	"netdisk/errs"
)

// Sentinels of the upload-session contract (sessions.go). Each comes wrapped
// in an *errs.Error of the kind named beside it; callers that must tell them
// apart use errors.Is.
var (
	// ErrNoSession: the session does not exist (never did, was dropped, or
	// belongs to another user). Kind NotFound.
	ErrNoSession = errors.New("no such upload session")
	// ErrSessionClosed: the session is merged, so it takes no more chunks and
	// merges no other content. Kind Conflict.
	ErrSessionClosed = errors.New("the session is already merged")
	// ErrIndexTaken: the session holds another chunk at that index. Kind
	// Conflict.
	ErrIndexTaken = errors.New("the session holds another chunk at that index")
	// ErrChunkGone: a chunk record named by id no longer exists (garbage
	// collected). Kind NotFound.
	ErrChunkGone = errors.New("chunk record no longer exists")
	// ErrLastAdmin: the user is the last admin, and removing them would
	// leave nobody to manage users. Kind Conflict.
	ErrLastAdmin = errors.New("it is the last admin")
)

// wrap gives an error an op and a kind. It is the one place where database
// errors become kinds, for every method of the store and for the drive's
// transactions through Tx:
//
//   - an error that already has a kind other than Other keeps it;
//   - busy or locked (SQLite could not get its lock within the busy timeout)
//     is Unavailable (503): a retry may succeed;
//   - a full disk (SQLITE_FULL, or an I/O error with errno ENOSPC) is
//     NoSpace (507);
//   - a uniqueness violation is Exists;
//   - anything else, a cancelled context included, is Other with the op.
func wrap(op, path string, err error) error {
	if err == nil {
		return nil
	}
	if errs.Classified(err) && errs.KindOf(err) != errs.Other {
		return err
	}
	if k := dbKind(err); k != errs.Other {
		return errs.E(op, k, path, err)
	}
	if errs.Classified(err) {
		return err
	}
	return errs.E(op, errs.Other, path, err)
}

// dbKind classifies a SQLite error; Other when it is none of the known ones.
func dbKind(err error) errs.Kind {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errs.Other
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch {
		case se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked:
			return errs.Unavailable
		case se.Code == sqlite3.ErrFull || se.SystemErrno == syscall.ENOSPC:
			return errs.NoSpace
		case se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey:
			return errs.Exists
		}
	}
	if k, ok := pgKind(err); ok {
		return k
	}
	if strings.Contains(err.Error(), "database is locked") {
		return errs.Unavailable
	}
	return errs.Other
}

func isUnique(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintUnique || pgUnique(err)
}
