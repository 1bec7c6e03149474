package mount

// The staging folder of one mount process, and the recovery of what an
// earlier process queued for write-back but never uploaded (it was killed,
// or the machine stopped): each file queued for write-back has a note beside
// its staged copy (stage-XXX.wb: the path it goes to, and its mode), written
// when it is queued and removed with the stage once the upload has landed.
// A new mount of the same --cache-dir finds the notes of staging folders no
// live process holds (each holds an flock on its folder's lock file) and
// uploads what they describe before it serves.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"netdisk/vpath"
)

// noteSuffix names the note beside a staged file queued for write-back.
const noteSuffix = ".wb"

// stageNote is what a note holds.
type stageNote struct {
	Path string  `json:"path"`
	Mode *uint32 `json:"mode,omitempty"` // permission bits to store, when not the default
}

// writeNoteLocked records where n's staged content goes (mu held). It is not
// fsynced, like the staged bytes: recovery covers a killed process (the page
// cache survives it), and fsync is what makes a write durable.
func (n *fileNode) writeNoteLocked() {
	if n.stage == nil || n.noted {
		return
	}
	b, err := json.Marshal(stageNote{Path: n.path(), Mode: n.mode})
	if err == nil {
		err = os.WriteFile(n.stage.Name()+noteSuffix, b, 0o600)
	}
	if err != nil {
		n.fsys.o.Logger.Warn("mount: cannot note a queued upload for recovery", "err", err)
		return
	}
	n.noted = true
}

// dropNoteLocked removes the note: the upload landed, or the file is gone.
func (n *fileNode) dropNoteLocked() {
	if n.noted && n.stage != nil {
		os.Remove(n.stage.Name() + noteSuffix)
	}
	n.noted = false
}

// Staging is a mount process's own staging folder, locked while it lives.
type Staging struct {
	Dir  string
	lock *os.File
}

// OpenStaging makes a new staging folder in cacheDir and locks it.
func OpenStaging(cacheDir string) (*Staging, error) {
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(cacheDir, "staging-")
	if err != nil {
		return nil, err
	}
	lf, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lf.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return &Staging{Dir: dir, lock: lf}, nil
}

// Close removes the folder if nothing is left in it but the lock, else keeps
// it (staged data whose upload failed) and says so; then unlocks.
func (s *Staging) Close(log *slog.Logger) {
	left, _ := os.ReadDir(s.Dir)
	if len(left) <= 1 {
		os.RemoveAll(s.Dir)
	} else {
		log.Warn("staged data not uploaded is kept; the next mount of this --cache-dir uploads what write-back queued", "dir", s.Dir, "files", len(left)-1)
	}
	s.lock.Close()
}

// Recover uploads what write-back queued in the staging folders of cacheDir
// that no live mount holds (their process died), then removes them. A file
// goes back to its path unless the server has a newer version there (changed
// elsewhere since): then it goes beside it, as "NAME.recovered-TIME", so
// neither is lost. It returns how many files it uploaded.
func (s *Staging) Recover(ctx context.Context, be Backend, log *slog.Logger) (int, error) {
	dirs, err := filepath.Glob(filepath.Join(filepath.Dir(s.Dir), "staging-*"))
	if err != nil {
		return 0, err
	}
	total := 0
	var errs []error
	for _, dir := range dirs {
		if dir == s.Dir {
			continue
		}
		n, err := recoverDir(ctx, dir, be, log)
		total += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

func recoverDir(ctx context.Context, dir string, be Backend, log *slog.Logger) (int, error) {
	lf, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return 0, err
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return 0, nil // a live mount's folder
	}
	notes, _ := filepath.Glob(filepath.Join(dir, "stage-*"+noteSuffix))
	done := 0
	for _, note := range notes {
		uploaded, err := recoverOne(ctx, note, be, log)
		if err != nil {
			return done, fmt.Errorf("recover %s: %w", note, err)
		}
		if uploaded {
			done++
		}
	}
	// What has no note was not queued (a failed upload without write-back,
	// a file still being written): kept, as before, for the user.
	left, _ := os.ReadDir(dir)
	if len(left) <= 1 {
		os.RemoveAll(dir)
	}
	return done, nil
}

// recoverOne uploads the file of one note; uploaded is false when there was
// nothing to upload (or nothing that could ever be).
func recoverOne(ctx context.Context, note string, be Backend, log *slog.Logger) (uploaded bool, err error) {
	b, err := os.ReadFile(note)
	if err != nil {
		return false, err
	}
	var sn stageNote
	if err := json.Unmarshal(b, &sn); err != nil || !strings.HasPrefix(sn.Path, "/") {
		return false, fmt.Errorf("unreadable note %q", logName(string(b)))
	}
	stage := strings.TrimSuffix(note, noteSuffix)
	if _, err := vpath.Clean(sn.Path); err != nil {
		// A path the drive cannot hold (too long, a name over 255 bytes), which
		// a mount once let write-back queue: no upload of it can ever
		// succeed, and kept it would fail every later mount's recovery.
		var size int64
		if st, err := os.Stat(stage); err == nil {
			size = st.Size()
		}
		log.Warn("mount: dropped a file an earlier mount queued: the drive cannot hold its path", "path", logName(sn.Path), "size", size, "err", err)
		os.Remove(stage)
		return false, os.Remove(note)
	}
	f, err := os.Open(stage)
	if errors.Is(err, fs.ErrNotExist) {
		return false, os.Remove(note) // uploaded and dropped; the note's removal was cut short
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	mtime := st.ModTime()
	dst := sn.Path
	if e, err := be.Stat(ctx, dst); err == nil && e.ModTime.After(mtime) {
		dst = fmt.Sprintf("%s.recovered-%s", dst, mtime.UTC().Format("20060102T150405Z"))
	} else if err != nil && Errno(err) != syscall.ENOENT {
		return false, err
	}
	attrs := Attrs{Mode: sn.Mode, ModTime: &mtime}
	e, err := be.Upload(ctx, f, st.Size(), nil, dst, attrs)
	if err != nil {
		return false, err
	}
	if !attrs.storedIn(e) {
		if _, err := be.SetAttr(ctx, dst, attrs); err != nil {
			return false, err
		}
	}
	log.Info("mount: uploaded a file write-back had queued when its mount ended", "path", logName(dst), "size", st.Size(), "written", mtime.Format(time.RFC3339))
	os.Remove(note)
	return true, os.Remove(stage)
}
