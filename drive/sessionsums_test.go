package drive

import (
	"fmt"
	"testing"
)

// Running sums of sessions that never end here (merged or dropped on another
// node) are evicted least recently used first, so new sessions keep getting
// them; an evicted session's later chunks add nothing.
func TestSessionSumsEvictLeastRecentlyUsed(t *testing.T) {
	s := newSessionSums()
	for i := range maxSessionSums {
		s.get(fmt.Sprint("s", i), true)
	}
	s.get("s0", false) // used again: s1 is now the least recently used
	evicted := s.running["s1"]
	s.get("new", true)
	if len(s.running) != maxSessionSums {
		t.Fatalf("%d states, want %d", len(s.running), maxSessionSums)
	}
	if s.running["s1"] != nil || s.running["s0"] == nil || s.running["new"] == nil {
		t.Fatalf("s0 kept %v, s1 evicted %v, new made %v", s.running["s0"] != nil, s.running["s1"] == nil, s.running["new"] != nil)
	}
	if !evicted.dropped {
		t.Fatal("the evicted state is not marked dropped: a chunk waiting on it would not wake")
	}
}
