package drive

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"netdisk/errs"
)

// DefaultDiskReserve is the space kept free for deletions unless configured.
const DefaultDiskReserve = 64 << 20

// ReserveFile is the reserve's name in the data directory.
const ReserveFile = "reserve"

// errDiskFull is the one line a write refused by the reserve carries.
var errDiskFull = errors.New("the server's disk is full: only deletions run until space is freed")

// diskReserve keeps deleting possible on a full disk. SQLite needs room to
// delete (its write-ahead log grows before a row goes away), and GC writes
// the database before it unlinks a chunk, so on a disk filled to the last
// byte neither a DELETE nor a GC could free anything, and a restart would not
// help. The reserve is a file of size bytes, allocated in the data directory
// (the database's file system) while space is plentiful:
//
//   - when the free space (outside the reserve) falls below half the reserve,
//     or a write fails for lack of space, the file is deleted and the drive
//     is "short": every write that adds data is refused (errs.NoSpace, 507)
//     before it stores anything, while deletions, moves and GC run in the
//     space the reserve gave back;
//   - once the free space is at least twice the reserve, the file is
//     allocated again and writes run: the gap between the two thresholds
//     keeps the drive from flapping on a disk that hovers near full.
//
// The state is decided from the file system at start (a reserve deleted
// before a restart stays deleted until space returns), so a restart on a
// full disk starts short, not stuck.
type diskReserve struct {
	dir  string
	path string
	size int64
	log  *slog.Logger

	mu    sync.Mutex
	short bool
}

// openReserve sets up the reserve of size bytes in dir: allocated when the
// free space allows (or kept), deleted when the disk is short. A file system
// whose free space cannot be read gets no reserve (nil).
func openReserve(dir string, size int64, log *slog.Logger) (*diskReserve, error) {
	r := &diskReserve{dir: dir, path: filepath.Join(dir, ReserveFile), size: size, log: log}
	free, ok := freeBytes(dir)
	if !ok {
		return nil, nil
	}
	fi, err := os.Stat(r.path)
	switch {
	case err == nil && fi.Size() == size:
		if free < size/2 {
			r.release("at start")
		}
	case err == nil || errors.Is(err, os.ErrNotExist):
		// Missing, or of another size (the setting changed): made anew.
		os.Remove(r.path)
		if free, _ = freeBytes(dir); free >= 2*size {
			if err := r.allocate(); err != nil && errs.KindOf(err) != errs.NoSpace {
				return nil, err
			}
		}
		if _, err := os.Stat(r.path); err != nil {
			r.short = true
			log.Warn("disk short at start: writes are refused until space is freed", "free", free, "reserve", size)
		}
	default:
		return nil, fmt.Errorf("disk reserve: %w", err)
	}
	return r, nil
}

// allocate creates the reserve file with its blocks allocated (not a sparse
// file: its space must really be the disk's). On failure nothing is left.
func (r *diskReserve) allocate() error {
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return errs.E("drive.reserve", errs.Other, "", err)
	}
	err = allocateFile(f, r.size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(r.path)
		return errs.E("drive.reserve", errs.Other, "", err)
	}
	return nil
}

// release deletes the reserve and makes the drive short (r.mu held or r not
// yet shared).
func (r *diskReserve) release(why string) {
	if r.short {
		return
	}
	r.short = true
	err := os.Remove(r.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		r.log.Error("disk full: cannot release the reserve", "err", err)
		return
	}
	free, _ := freeBytes(r.dir)
	r.log.Warn("disk full: reserve released, only deletions run until space is freed", "when", why, "free", free, "reserve", r.size)
}

// room says whether a write that adds data may run now (errs.NoSpace when
// not), re-allocating the reserve once space came back.
func (r *diskReserve) room(op string) error {
	if r == nil {
		return nil
	}
	free, ok := freeBytes(r.dir)
	if !ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.short {
		if free >= r.size/2 {
			return nil
		}
		r.release("free space below half the reserve")
		return errs.E(op, errs.NoSpace, "", errDiskFull)
	}
	if free < 2*r.size {
		return errs.E(op, errs.NoSpace, "", errDiskFull)
	}
	if err := r.allocate(); err != nil {
		r.log.Warn("disk space back, but the reserve cannot be allocated", "err", err)
		return errs.E(op, errs.NoSpace, "", errDiskFull)
	}
	r.short = false
	r.log.Info("disk space back: reserve allocated, writes run again", "free", free-r.size, "reserve", r.size)
	return nil
}

// full is told of every failure: one for lack of space on the reserve's
// file system releases the reserve, so the deletions that must follow have
// room. A store on another file system (the chunks on a disk of their own)
// that fills leaves the reserve alone.
// It reports whether this call released it.
func (r *diskReserve) full(err error) bool {
	if r == nil || errs.KindOf(err) != errs.NoSpace {
		return false
	}
	if free, ok := freeBytes(r.dir); ok && free >= r.size {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	was := r.short
	r.release("a write found no space")
	return !was && r.short
}

// room is the drive's admission for writes that add data (see diskReserve).
func (d *Drive) room(op string) error { return d.reserve.room(op) }

// noteFull releases the reserve when err says the disk is full, and returns
// err.
func (d *Drive) noteFull(err error) error {
	d.reserve.full(err)
	return err
}

// writeZeros allocates size bytes by writing them, for file systems without
// fallocate.
func writeZeros(f *os.File, size int64) error {
	buf := make([]byte, 1<<20)
	for size > 0 {
		n := min(size, int64(len(buf)))
		if _, err := f.Write(buf[:n]); err != nil {
			return err
		}
		size -= n
	}
	return nil
}

// retryable reports whether a deletion that failed with err should run once
// more: it found no space, and releasing the reserve just made some.
func (d *Drive) retryable(err error) bool {
	return d.reserve != nil && errs.KindOf(err) == errs.NoSpace && d.reserve.full(err)
}
