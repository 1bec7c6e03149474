// Package fanout runs a benchmark's numbered operations on a fixed number of
// goroutines, for throughput and latency figures.
package fanout

import (
	"sync"
	"sync/atomic"
	"time"
)

// Run calls fn(i) once for every i in [0, n) on workers goroutines, each
// taking the next i as soon as it finished its last, and returns the wall
// time of the whole run and each call's duration, indexed by i.
func Run(workers, n int, fn func(i int)) (wall time.Duration, lats []time.Duration) {
	var next atomic.Int64
	lats = make([]time.Duration, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				s := time.Now()
				fn(i)
				lats[i] = time.Since(s)
			}
		}()
	}
	wg.Wait()
	return time.Since(t0), lats
}
