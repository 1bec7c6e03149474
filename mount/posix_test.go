package mount_test

import (
	"sort"
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"
)

// unsupported lists the go-fuse POSIX cases the mount does not pass, with
// the reason; the README repeats this list.
var unsupported = map[string]string{
	"Link":                "hard links are not stored by the drive",
	"LinkUnlinkRename":    "hard links are not stored by the drive",
	"NlinkZero":           "uses hard links",
	"XAttr":               "extended attributes are not stored",
	"XAttrLarge":          "extended attributes are not stored",
	"FcntlFlockSetLk":     "POSIX locks are local to one kernel and are not offered",
	"FcntlFlockLocksFile": "POSIX locks are local to one kernel and are not offered",
	"Fallocate":           "preallocation has no meaning for chunked content",
	"FallocateKeepSize":   "preallocation has no meaning for chunked content",
	"LseekHoleSeeksToEOF": "SEEK_HOLE/SEEK_DATA are not offered",
	"LseekEnxioCheck":     "SEEK_HOLE/SEEK_DATA are not offered",
	"Tmpfile":             "O_TMPFILE (an unnamed file) cannot be staged to a path",
}

// TestPosix runs every go-fuse POSIX case against the mount except the
// documented unsupported ones, which are not run at all (a missing tool or
// device fails through testutil.RequireTool instead); once uploading at
// close, once with write-back (close returns before the upload).
func TestPosix(t *testing.T) {
	for name := range unsupported {
		if _, ok := posixtest.All[name]; !ok {
			t.Errorf("unsupported lists %q, which posixtest no longer has: update the list and the README", name)
		}
	}
	t.Run("upload-at-close", func(t *testing.T) { runPosix(t, setup(t)) })
	t.Run("write-back", func(t *testing.T) {
		runPosix(t, setup(t, func(o *optsT) { o.WriteBack = true }))
	})
}

func runPosix(t *testing.T, e *env) {
	names := make([]string, 0, len(posixtest.All))
	for n := range posixtest.All {
		if why, ok := unsupported[n]; ok {
			t.Logf("not run, unsupported: %s: %s", n, why)
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		fn := posixtest.All[name]
		t.Run(name, func(t *testing.T) {
			dir, err := mkTestDir(e.mnt, name)
			if err != nil {
				t.Fatal(err)
			}
			fn(t, dir)
		})
	}
}
