package mount_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"netdisk/mount"
)

// pageCounter is the real HTTP backend counting the listing pages asked.
type pageCounter struct {
	*mount.HTTPBackend
	mu            sync.Mutex
	pages, widest int
}

func (p *pageCounter) ListPage(ctx context.Context, dir, cursor string, limit int) ([]mount.Entry, string, error) {
	es, next, err := p.HTTPBackend.ListPage(ctx, dir, cursor, limit)
	p.mu.Lock()
	p.pages++
	p.widest = max(p.widest, len(es))
	p.mu.Unlock()
	return es, next, err
}

// A folder is listed a page at a time and the pages make the whole folder:
// readdir and ls -l show every entry once, by name, with its type; a
// rename onto a folder still tells an empty one from a full one.
func TestListingReadsPages(t *testing.T) {
	defer mount.SetListPage(4)()
	var pc *pageCounter
	e := setup(t, func(o *mount.Options) {
		pc = &pageCounter{HTTPBackend: o.Backend.(*mount.HTTPBackend)}
		o.Backend = pc
	})
	ctx := context.Background()
	_, err := e.c.Mkdir(ctx, "/d", false)
	mustNil(t, err)
	var want []string
	for i := range 6 {
		p := fmt.Sprintf("/d/dir%02d", i)
		_, err := e.c.Mkdir(ctx, p, false)
		mustNil(t, err)
		want = append(want, filepath.Base(p))
	}
	for i := range 5 {
		p := fmt.Sprintf("/d/link%02d", i)
		_, err := e.c.Symlink(ctx, p, "target")
		mustNil(t, err)
		want = append(want, filepath.Base(p))
	}
	pc.mu.Lock()
	pc.pages, pc.widest = 0, 0
	pc.mu.Unlock()
	des, err := os.ReadDir(filepath.Join(e.mnt, "d"))
	mustNil(t, err)
	var got []string
	for _, de := range des {
		got = append(got, de.Name())
		if isLink := de.Type()&os.ModeSymlink != 0; de.IsDir() == isLink {
			t.Errorf("%s: type %v", de.Name(), de.Type())
		}
		if _, err := os.Lstat(filepath.Join(e.mnt, "d", de.Name())); err != nil {
			t.Errorf("lstat %s: %v", de.Name(), err)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("readdir = %v, want %v", got, want)
	}
	pc.mu.Lock()
	pages, widest := pc.pages, pc.widest
	pc.mu.Unlock()
	if pages < 3 || widest > 4 {
		t.Fatalf("%d pages of at most %d entries for 11, want 3 or more of at most 4", pages, widest)
	}

	// Renaming a folder onto another replaces only an empty one.
	mustNil(t, os.Mkdir(filepath.Join(e.mnt, "e"), 0o755))
	err = os.Rename(filepath.Join(e.mnt, "e"), filepath.Join(e.mnt, "d"))
	if !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("rename onto a full folder: %v, want ENOTEMPTY", err)
	}
	// (Onto an empty one the emptiness check passes; what the server
	// answers then is not this test's.)
	if err := os.Rename(filepath.Join(e.mnt, "e"), filepath.Join(e.mnt, "d", "dir00")); errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("rename onto an empty folder: %v", err)
	}
}
