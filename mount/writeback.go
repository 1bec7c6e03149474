package mount

// Write-back (Options.WriteBack): close(2) returns once the written bytes
// are in the local staged file, and the upload runs in the background, as
// rclone mount --vfs-cache-mode writes does. What stays honest:
//
//   - fsync(2) still returns only when the server has committed the file
//     (Fsync uploads at once, or waits for the background upload running);
//   - close-to-open consistency through this mount: a file closed here
//     reads back its new content here at once (the stage answers reads,
//     stat and listings until the upload has landed and the stage is
//     dropped), and a new file is listed and found here before the server
//     has it (dirNode merges such local files into its listings);
//   - namespace changes never overtake the data: renaming or removing a file
//     waits for its upload first, and renaming or removing a folder waits
//     for every pending upload (its files' paths are computed at upload
//     time, so none may be in flight while the folder moves);
//   - unmount uploads everything still queued before it returns (FS.Close).
//
// What the user gives up for the speed: an error of a background upload
// (quota, a WebDAV lock, the server down) no longer fails the close; it is
// logged, the data stays staged, and the next fsync, close or the unmount
// retries it (and, when the server could not be reached, its return:
// link.go). Other clients see a file once its upload has landed.

import (
	"context"
	"sync"
	"syscall"
)

// writeBackWorkers is how many closed files upload at once: enough to
// overlap round trips and let the server share fsyncs (group commit).
const writeBackWorkers = 4

// defaultWriteBackFiles bounds the closed files waiting for upload: each
// holds its staged file open, and a writer faster than the server is held
// back at close beyond it.
const defaultWriteBackFiles = 4096

type writeBack struct {
	fsys *FS
	max  int

	mu       sync.Mutex
	cond     sync.Cond // L is &mu: the queue or inflight changed
	queue    []*fileNode
	queued   map[*fileNode]bool // in queue (not yet taken by a worker)
	inflight int
	closed   bool
	wg       sync.WaitGroup
	// waiting are files whose upload found the server out of reach: queued
	// again when it answers (requeueWaiting).
	waiting map[*fileNode]bool
}

func newWriteBack(f *FS, max int) *writeBack {
	if max <= 0 {
		max = defaultWriteBackFiles
	}
	w := &writeBack{fsys: f, max: max, queued: map[*fileNode]bool{}, waiting: map[*fileNode]bool{}}
	w.cond.L = &w.mu
	for range writeBackWorkers {
		w.wg.Add(1)
		go w.work()
	}
	return w
}

// add queues n for upload; it waits while the queue is full. Callers must
// not hold n.mu (a worker may need it to make room).
func (w *writeBack) add(n *fileNode) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.queued[n] {
		return
	}
	for len(w.queue) >= w.max && !w.closed {
		w.cond.Wait()
	}
	if w.closed {
		// Closing: upload here rather than lose the data.
		w.mu.Unlock()
		n.writeBackNow()
		w.mu.Lock()
		return
	}
	w.queue = append(w.queue, n)
	w.queued[n] = true
	w.cond.Broadcast()
}

func (w *writeBack) work() {
	defer w.wg.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for len(w.queue) == 0 && !w.closed {
			w.cond.Wait()
		}
		if len(w.queue) == 0 {
			return // closed and drained
		}
		n := w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		delete(w.queued, n)
		w.inflight++
		w.cond.Broadcast()
		w.mu.Unlock()
		errno := n.writeBackNow()
		w.mu.Lock()
		if errno == syscall.EHOSTDOWN {
			w.waiting[n] = true
		}
		w.inflight--
		w.cond.Broadcast()
	}
}

// requeueWaiting queues again the files whose upload found the server out
// of reach. It does not wait for room in the queue: it runs on the call
// that found the server back, which may be a worker's.
func (w *writeBack) requeueWaiting() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	for n := range w.waiting {
		if !w.queued[n] {
			w.queue = append(w.queue, n)
			w.queued[n] = true
		}
	}
	clear(w.waiting)
	w.cond.Broadcast()
}

// sync waits until every file queued before or during the call has been
// tried (uploaded, or failed and left staged), or ctx ends.
func (w *writeBack) sync(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		w.mu.Lock()
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	defer stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.queue) > 0 || w.inflight > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		w.cond.Wait()
	}
	return nil
}

// close uploads what is queued and stops the workers.
func (w *writeBack) close() {
	w.mu.Lock()
	w.closed = true
	w.cond.Broadcast()
	w.mu.Unlock()
	w.wg.Wait()
}

// writeBackNow is a worker's upload of n: what Flush and Release do without
// write-back. A failure leaves the data staged (dirty) for the next fsync,
// close or unmount; the upload logged it.
func (n *fileNode) writeBackNow() syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.waitIdleLocked()
	if n.stage != nil && n.dirty && !n.deleted && n.mtime == nil {
		// The mtime shown since the close is the last write's: the server
		// stores that one, not the later time the upload lands (make and
		// rsync compare mtimes; one must not jump by itself).
		if st, err := n.stage.Stat(); err == nil {
			t := st.ModTime()
			n.mtime = &t
		}
	}
	if errno := n.flushLocked(context.Background()); errno != 0 {
		return errno
	}
	if n.opens == 0 && n.stage != nil {
		n.dropStage()
	}
	return 0
}
