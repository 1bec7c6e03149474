package quota

import (
	"container/heap"
	"time"
)

// dueSet is the embedded ledger's twin of the Redis ZSET of delayed tasks: the
// sessions with a flush to do, ordered by score (due time, or lease end while
// claimed). A scan pops from the front while the front is due, so it never
// looks at a task that is not due, however many sessions are open.
type dueSet []*memSession

func (d dueSet) Len() int           { return len(d) }
func (d dueSet) Less(i, j int) bool { return d[i].score.Before(d[j].score) }

func (d dueSet) Swap(i, j int) {
	d[i], d[j] = d[j], d[i]
	d[i].slot, d[j].slot = i, j
}

// Push and Pop are for container/heap only; use schedule and unschedule.
func (d *dueSet) Push(x any) {
	s := x.(*memSession)
	s.slot = len(*d)
	*d = append(*d, s)
}

func (d *dueSet) Pop() any {
	old := *d
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*d = old[:len(old)-1]
	s.slot = -1
	return s
}

// schedule puts s in the set at score, or moves it there (ZADD).
func (d *dueSet) schedule(s *memSession, score time.Time) {
	s.score = score
	if s.slot >= 0 {
		heap.Fix(d, s.slot)
		return
	}
	heap.Push(d, s)
}

// unschedule takes s out of the set if it is there (ZREM).
func (d *dueSet) unschedule(s *memSession) {
	if s.slot >= 0 {
		heap.Remove(d, s.slot)
	}
}

// first returns the task with the lowest score, or nil when the set is empty.
func (d dueSet) first() *memSession {
	if len(d) == 0 {
		return nil
	}
	return d[0]
}
