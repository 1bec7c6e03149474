package mount_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"netdisk/chunker"
	"netdisk/mount"
	"netdisk/testutil"
)

// listGate is the real HTTP backend whose folder listings, once armed, wait
// after the server answered until the test releases them: a listing the
// kernel asks for (a lookup or getattr of the folder) beside a rename in it.
// With uploads set, uploads wait until it is closed.
type listGate struct {
	*mount.HTTPBackend
	uploads chan struct{}

	mu      sync.Mutex
	armed   bool
	listed  chan struct{} // closed when an armed listing has its answer
	release chan struct{}
}

func (g *listGate) ListPage(ctx context.Context, dir, cursor string, limit int) ([]mount.Entry, string, error) {
	es, next, err := g.HTTPBackend.ListPage(ctx, dir, cursor, limit)
	if next != "" {
		return es, next, err // the listing is not over
	}
	g.mu.Lock()
	armed := g.armed
	g.armed = false
	g.mu.Unlock()
	if armed {
		close(g.listed)
		<-g.release
	}
	return es, next, err
}

func (g *listGate) Upload(ctx context.Context, r io.ReaderAt, size int64, sums []chunker.Sum, p string, a mount.Attrs) (mount.Entry, error) {
	if g.uploads != nil {
		select {
		case <-g.uploads:
		case <-ctx.Done():
			return mount.Entry{}, ctx.Err()
		}
	}
	return g.HTTPBackend.Upload(ctx, r, size, sums, p, a)
}

func (g *listGate) arm() {
	g.mu.Lock()
	g.armed, g.listed, g.release = true, make(chan struct{}), make(chan struct{})
	g.mu.Unlock()
}

// TestListingRacingRename: a folder listing asked for before a rename in
// that folder and answered after it must not bring the old name back. The
// kernel looks a name up before it creates it, so a stale listing that
// still shows the name turns the next symlink or O_EXCL create there into
// EEXIST (go-fuse's OpenSymlinkRace saw this under load, once in about five
// runs). Both ways the old name can come back are driven: in the server's
// answer (taken before the rename), and as a file created here that only
// the listing's own snapshot still held at that name (write-back).
func TestListingRacingRename(t *testing.T) {
	for _, tc := range []struct {
		name      string
		writeBack bool
		// local: the file is still queued (not on the server) when the
		// listing starts, and its upload is held until the rename.
		local bool
	}{
		{"server-answer/upload-at-close", false, false},
		{"server-answer/write-back", true, false},
		{"local-file/write-back", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testutil.NewClock(time.Now())
			var lg *listGate
			e := setup(t, func(o *mount.Options) {
				lg = &listGate{HTTPBackend: o.Backend.(*mount.HTTPBackend)}
				if tc.local {
					lg.uploads = make(chan struct{})
				}
				o.Backend, o.WriteBack, o.Now = lg, tc.writeBack, clk.Now
			})
			var openUploads sync.Once
			letUploadsGo := func() {
				if lg.uploads != nil {
					openUploads.Do(func() { close(lg.uploads) })
				}
			}
			t.Cleanup(letUploadsGo)
			tmp, dst := filepath.Join(e.mnt, "f.tmp"), filepath.Join(e.mnt, "f")
			mustNil(t, os.WriteFile(tmp, []byte("content"), 0o600))
			if !tc.local {
				e.syncAll(t) // on the server: the listing's answer holds it
			}
			clk.Advance(time.Hour) // the root's listing is old: the next lookup lists

			lg.arm()
			listDone := make(chan error, 1)
			go func() { listDone <- mount.ListDir(context.Background(), e.root) }()
			<-lg.listed
			if tc.local {
				go letUploadsGo() // the rename sends the file first
			}
			mustNil(t, os.Rename(tmp, dst))
			close(lg.release)
			mustNil(t, <-listDone)

			// The kernel looks f.tmp up before making it: the listing just
			// stored must not say it exists.
			if _, err := os.Lstat(tmp); !os.IsNotExist(err) {
				t.Fatalf("after the rename, lstat of the old name: %v, want not found", err)
			}
			if err := os.Symlink("/etc/passwd", tmp); err != nil {
				t.Fatalf("symlink at the name just renamed away: %v", err)
			}
			mustNil(t, os.Rename(tmp, dst))
			if got, err := os.Readlink(dst); err != nil || got != "/etc/passwd" {
				t.Fatalf("readlink %s = %q, %v", dst, got, err)
			}
			e.syncAll(t)
			if e.serverHas("/f.tmp") {
				t.Fatal("the server still has the old name")
			}
		})
	}
}
