package dedup

import (
	"context"
	"hash/fnv"
	"sync"
)

// Pins keep chunks alive between the moment an upload stores a blob and the
// moment a commit references it in the metadata store. GC holds a key's stripe
// while it deletes that key, and Pin takes the same stripe, so a blob is never
// deleted under an upload that just claimed it.
type Pins struct {
	stripes [256]pinStripe
}

type pinStripe struct {
	mu   sync.Mutex
	refs map[Key]int
}

// NewPins returns an empty pin set.
func NewPins() *Pins {
	p := &Pins{}
	for i := range p.stripes {
		p.stripes[i].refs = make(map[Key]int)
	}
	return p
}

func (p *Pins) stripe(k Key) *pinStripe {
	h := fnv.New32a()
	h.Write([]byte(k))
	return &p.stripes[h.Sum32()%uint32(len(p.stripes))]
}

// Pin adds a reference to k. It waits for a GC deletion of k in progress.
func (p *Pins) Pin(_ context.Context, k Key) {
	s := p.stripe(k)
	s.mu.Lock()
	s.refs[k]++
	s.mu.Unlock()
}

// Unpin drops a reference taken by Pin.
func (p *Pins) Unpin(_ context.Context, k Key) {
	s := p.stripe(k)
	s.mu.Lock()
	if s.refs[k] <= 1 {
		delete(s.refs, k)
	} else {
		s.refs[k]--
	}
	s.mu.Unlock()
}

// IfUnpinned runs fn while holding k's stripe, only if k has no pin; it
// reports whether fn ran. fn should be short: it blocks pins of that stripe.
func (p *Pins) IfUnpinned(_ context.Context, k Key, fn func() error) (bool, error) {
	s := p.stripe(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs[k] > 0 {
		return false, nil
	}
	return true, fn()
}
