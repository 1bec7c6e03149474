package drive

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/mattn/go-sqlite3"

	"netdisk/errs"
)

// A database on a full disk is NoSpace like a full chunk store, and its
// message names no server path.
func TestDiskFullKinds(t *testing.T) {
	full := fmt.Errorf("meta: commit /srv/netdisk/meta.db: %w", sqlite3.Error{Code: sqlite3.ErrFull})
	ioFull := fmt.Errorf("meta: %w", sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.ENOSPC})
	for _, err := range []error{full, ioFull} {
		got := DiskFull("drive.Commit", err)
		if errs.KindOf(got) != errs.NoSpace || errs.Code(got) != "no_space" {
			t.Fatalf("DiskFull(%v): kind %v", err, errs.KindOf(got))
		}
		if m := errs.Message(got); m != errs.NoSpace.String() {
			t.Fatalf("message %q", m)
		}
	}
	other := errors.New("boom")
	if DiskFull("x", other) != other || DiskFull("x", nil) != nil {
		t.Fatal("other errors must pass unchanged")
	}
}
