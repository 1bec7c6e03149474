package mount

// The read path of a file: a staged file answers reads locally; otherwise the
// open handle reads the chunks of the version it opened, from the cache or
// the server, and follows the file when the server says it changed.

import (
	"context"
	"errors"
	"io"
	"sort"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

func (n *fileNode) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h, _ := fh.(*handle)
	n.mu.Lock()
	if n.stage != nil {
		defer n.mu.Unlock()
		m, err := n.stage.ReadAt(dest, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, Errno(err)
		}
		return fuse.ReadResultData(dest[:m]), 0
	}
	n.mu.Unlock()
	if h == nil {
		return nil, syscall.EBADF
	}
	if h.cl.FileHash == "" && h.cl.Size == 0 && !h.loaded {
		if errno := h.load(ctx); errno != 0 {
			return nil, errno
		}
	}
	m, errno := h.read(ctx, dest, off)
	if errno != 0 {
		return nil, errno
	}
	return fuse.ReadResultData(dest[:m]), 0
}

// ---- reading chunks through a handle

// handle is one open file; a read-only handle keeps the chunk list of the
// version it opened, revalidated when the server says it changed.
type handle struct {
	n        *fileNode
	writable bool

	mu      sync.Mutex
	loaded  bool
	cl      ChunkList
	lastEnd int64
}

func (h *handle) load(ctx context.Context) syscall.Errno {
	ctx, cancel := h.n.fsys.opCtx(ctx)
	defer cancel()
	p := h.n.path()
	cl, err := h.n.fsys.o.Backend.ChunkList(ctx, p)
	h.n.mu.Lock()
	switch {
	case err == nil:
		h.n.cl = &cl
	case offline(err) && h.n.cl != nil && h.n.cl.FileHash == h.n.entry.FileHash:
		// The server is out of reach and the version last seen is the
		// one last opened: its cached chunks can be read (link.go).
		cl, err = *h.n.cl, nil
	}
	h.n.mu.Unlock()
	if err != nil {
		return Errno(err)
	}
	h.mu.Lock()
	h.cl, h.loaded = cl, true
	h.mu.Unlock()
	return 0
}

func (h *handle) read(ctx context.Context, dest []byte, off int64) (int, syscall.Errno) {
	m, errno := h.readRemote(ctx, dest, off)
	if errno == syscall.ESTALE {
		// The file changed on the server: read the new version.
		if errno = h.load(ctx); errno == 0 {
			m, errno = h.readRemote(ctx, dest, off)
		}
	}
	return m, errno
}

func (h *handle) readRemote(ctx context.Context, dest []byte, off int64) (int, syscall.Errno) {
	// The node's path now: the file may have been renamed since the open
	// (its version is pinned by the file hash, not by the name).
	p := h.n.path()
	h.mu.Lock()
	cl := h.cl
	// The kernel's readahead sends several reads at once, which may arrive
	// out of order: "sequential" allows for that window.
	sequential := off >= h.lastEnd-seqWindow && off <= h.lastEnd+seqWindow
	h.mu.Unlock()
	if off >= cl.Size {
		return 0, 0
	}
	end := min(off+int64(len(dest)), cl.Size)
	if sequential && h.n.fsys.o.Prefetch > 0 {
		// The chunks after this read are asked for before this read waits
		// for its own: the server sends them while this chunk arrives and
		// is checked, and a reader never finds the pipeline empty (were
		// they asked for after, every chunk the reader caught up with would
		// cost a whole round trip and transfer in its path).
		next := sort.Search(len(cl.Chunks), func(i int) bool { return cl.Chunks[i].Offset >= end })
		h.n.fsys.prefetchAfter(p, cl, next)
	}
	i := sort.Search(len(cl.Chunks), func(i int) bool { return cl.Chunks[i].Offset+cl.Chunks[i].Size > off })
	done := 0
	for pos := off; pos < end; i++ {
		if i >= len(cl.Chunks) {
			return done, syscall.EIO
		}
		c := cl.Chunks[i]
		in := pos - c.Offset
		want := min(c.Size-in, end-pos)
		buf := dest[done : done+int(want)]
		if _, ok := h.n.fsys.o.Cache.ReadAt(c, c.Key(p, cl.FileHash), buf, in); !ok {
			data, err := h.n.fsys.fetch(ctx, p, cl.FileHash, c)
			if err != nil {
				return done, Errno(err)
			}
			copy(buf, data[in:in+want])
		}
		done += int(want)
		pos += want
	}
	h.mu.Lock()
	h.lastEnd = end
	h.mu.Unlock()
	return done, 0
}

// seqWindow is how far a read may be from the end of the previous one and
// still count as sequential (a few kernel readahead requests).
const seqWindow = 4 << 20
