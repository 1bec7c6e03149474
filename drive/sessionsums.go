package drive

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"hash"
	"sync"

	"netdisk/meta"
)

// The content checksums (whole-file MD5 and SHA-1) of a file uploaded in a
// session, computed from the chunks' bytes as they arrive instead of by the
// background pass reading the file back after the merge (checksums.go).
// MD5 and SHA-1 are chains over the bytes in order: a session keeps one
// running state, chunk i is added to it when chunks 0..i-1 are in it. Chunks
// mostly arrive in order, but a client sending several at once finishes them
// in any order: a chunk that finds its predecessor still being received on
// this node waits for it (it ends, stored or refused, without waiting on
// anything later), then adds its bytes. A chunk whose predecessor is not
// being received (sent later, held already, refused, or received by another
// node) leaves the state where it is: the state stops at the first gap.
//
// At the merge a state covering every chunk gives the file its checksums in
// the merge's own commit; one covering the first k chunks is handed to the
// background pass, which reads only the rest (fillOne). The states live in
// this process: after a restart, or on a node that did not see the chunks,
// the pass reads the whole file, as it would have anyway — the checksums are
// recomputed, never wrong. The states are small (two hash states) and
// bounded in number (maxSessionSums, the least recently used evicted).

// maxSessionSums bounds the sessions with a running state (and the merged
// files waiting for the pass with a partial one); a session whose state was
// evicted gets its checksums from the pass.
const maxSessionSums = 4096

// runningSums is one session's state: the MD5 and SHA-1 of chunks
// [0, next) and what arrives now.
type runningSums struct {
	mu       sync.Mutex
	next     int64
	md5      hash.Hash
	sha1     hash.Hash
	size     int64
	fed      []string      // SHA-256 of each chunk in the state, in order
	arriving map[int64]int // chunk bodies being received, by index
	changed  chan struct{} // closed (and replaced) when next or arriving changes
	dropped  bool          // the session ended: nothing more is added
	used     uint64        // sessionSums.seq when last used (guarded by sessionSums.mu)
}

// sessionSums holds the running states by session id, and the partial ones
// handed to the checksum pass by node id.
type sessionSums struct {
	mu      sync.Mutex
	running map[string]*runningSums
	partial map[int64]partialSums
	seq     uint64 // counts uses, to evict the least recently used state
}

// partialSums is what the pass resumes from: the states after the first
// next chunks of the version whose file hash is fileHash.
type partialSums struct {
	fileHash  string
	next      int64
	size      int64
	md5, sha1 []byte // marshalled hash states
	fed       []string
}

func newSessionSums() *sessionSums {
	return &sessionSums{running: map[string]*runningSums{}, partial: map[int64]partialSums{}}
}

// get returns the state of session id, made when create. A new state past
// maxSessionSums evicts the least recently used one: sessions that end on
// another node (several daemons) are never merged or dropped here, and must
// not keep the room forever.
func (s *sessionSums) get(id string, create bool) *runningSums {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	r := s.running[id]
	if r == nil && create {
		if len(s.running) >= maxSessionSums {
			var oldID string
			var old *runningSums
			for k, v := range s.running {
				if old == nil || v.used < old.used {
					oldID, old = k, v
				}
			}
			delete(s.running, oldID)
			old.mu.Lock()
			old.dropped = true
			old.broadcast()
			old.mu.Unlock()
		}
		r = &runningSums{md5: md5.New(), sha1: sha1.New(), arriving: map[int64]int{}, changed: make(chan struct{})}
		s.running[id] = r
	}
	if r != nil {
		r.used = s.seq
	}
	return r
}

// take removes session id's state and returns it (nil if none).
func (s *sessionSums) take(id string) *runningSums {
	s.mu.Lock()
	r := s.running[id]
	delete(s.running, id)
	s.mu.Unlock()
	if r != nil {
		r.mu.Lock()
		r.dropped = true
		r.broadcast()
		r.mu.Unlock()
	}
	return r
}

// broadcast wakes the chunks waiting on r; r.mu is held.
func (r *runningSums) broadcast() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// ChunkArriving notes that the body of chunk idx of session id is being
// received on this node (before its first byte is read); call done once,
// after the chunk is stored or refused. A later chunk waits for it rather
// than leaving a gap in the session's checksums.
func (d *Drive) ChunkArriving(id string, idx int64) (done func()) {
	r := d.sums.get(id, true)
	if r == nil {
		return func() {}
	}
	r.mu.Lock()
	r.arriving[idx]++
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			if r.arriving[idx]--; r.arriving[idx] == 0 {
				delete(r.arriving, idx)
			}
			r.broadcast()
			r.mu.Unlock()
		})
	}
}

// addSessionChunk adds chunk idx (SHA-256 sha, bytes b, just recorded) to
// session id's running sums when its predecessors are in them, waiting for
// predecessors being received. It never fails: a chunk it cannot add leaves
// a gap, filled later by the checksum pass.
func (d *Drive) addSessionChunk(ctx context.Context, id string, idx int64, sha string, b []byte) {
	r := d.sums.get(id, idx == 0)
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for !r.dropped && r.next < idx {
		waiting := false
		for j := r.next; j < idx; j++ {
			if r.arriving[j] > 0 {
				waiting = true
				break
			}
		}
		if !waiting {
			return // a gap: the pass reads from r.next on
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			r.mu.Lock()
			return
		}
		r.mu.Lock()
	}
	if r.dropped || r.next != idx {
		return // ended, or already in (the same chunk again)
	}
	// Held under r.mu: the next chunk waits for this one anyway.
	r.md5.Write(b)
	r.sha1.Write(b)
	r.size += int64(len(b))
	r.fed = append(r.fed, sha)
	r.next++
	r.broadcast()
}

// sessionChecksums ends session id's running sums for the merge of f: when
// they cover every chunk of f it sets f.MD5 and f.SHA1; when they cover a
// prefix it returns it, for the pass (keepPartial) once the merge has a node.
func (d *Drive) sessionChecksums(id string, f *meta.NewFile) *partialSums {
	r := d.sums.take(id)
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next == 0 || int(r.next) > len(f.Chunks) {
		return nil
	}
	for i, sha := range r.fed {
		if f.Chunks[i].SHA256 != sha {
			return nil // not the chunks committed (cannot happen for a session's own chunks)
		}
	}
	if int(r.next) == len(f.Chunks) {
		f.MD5 = hex.EncodeToString(r.md5.Sum(nil))
		f.SHA1 = hex.EncodeToString(r.sha1.Sum(nil))
		return nil
	}
	p := &partialSums{next: r.next, size: r.size, fed: r.fed}
	var err error
	if p.md5, err = r.md5.(interface{ MarshalBinary() ([]byte, error) }).MarshalBinary(); err != nil {
		return nil
	}
	if p.sha1, err = r.sha1.(interface{ MarshalBinary() ([]byte, error) }).MarshalBinary(); err != nil {
		return nil
	}
	return p
}

// keepPartial hands p, the sums of the first chunks of node n's version, to
// the checksum pass.
func (d *Drive) keepPartial(n meta.Node, p *partialSums) {
	if p == nil || n.ID == 0 {
		return
	}
	p.fileHash = n.FileHash
	s := d.sums
	s.mu.Lock()
	if len(s.partial) >= maxSessionSums {
		// One the pass never took (its file was replaced by a version
		// with checksums): any goes, the pass reads that file whole.
		for k := range s.partial {
			delete(s.partial, k)
			break
		}
	}
	s.partial[n.ID] = *p
	s.mu.Unlock()
}

// resumeFrom returns the sums the pass can start file n from: the hash
// states after chunks [0, k) and their size, when a merge left them for this
// very version (the same file hash and chunk SHA-256s); else fresh states
// and k = 0.
func (d *Drive) resumeFrom(n meta.Node, chunks []meta.FileChunk) (m, s hash.Hash, k int, size int64) {
	m, s = md5.New(), sha1.New()
	d.sums.mu.Lock()
	p, ok := d.sums.partial[n.ID]
	delete(d.sums.partial, n.ID)
	d.sums.mu.Unlock()
	if !ok || p.fileHash != n.FileHash || len(p.fed) > len(chunks) {
		return m, s, 0, 0
	}
	for i, sha := range p.fed {
		if chunks[i].SHA256 != sha {
			return m, s, 0, 0
		}
	}
	type unmarshaler interface{ UnmarshalBinary([]byte) error }
	if m.(unmarshaler).UnmarshalBinary(p.md5) != nil || s.(unmarshaler).UnmarshalBinary(p.sha1) != nil {
		return md5.New(), sha1.New(), 0, 0
	}
	return m, s, int(p.next), p.size
}

// dropSessionSums forgets session id's running sums (aborted, expired).
func (d *Drive) dropSessionSums(id string) { d.sums.take(id) }
