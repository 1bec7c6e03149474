package drive

import (
	"sync/atomic"
	"time"
)

// Progress is how far the drive's background work has come since the
// process started, for the daemon's metrics: garbage collection and the
// checksum passes (RunChecksums). Counters only grow.
type Progress struct {
	GCRuns        int64     // GC passes completed
	GCRunning     bool      // a GC pass is under way
	GCChunks      int64     // chunk records collected
	GCBytes       int64     // bytes those chunks held
	GCOrphans     int64     // stored chunks without a record, deleted
	GCLast        time.Time // end of the last completed pass; zero before one
	SumPasses     int64     // checksum passes completed
	SumRunning    bool      // a checksum pass is under way
	SumFiles      int64     // files given their checksums
	SumSkipped    int64     // files left for a later pass (a chunk unreadable)
	SumBytes      int64     // bytes the passes read back from the chunk store
	SumLastFilled time.Time // end of the last pass that filled a file
}

// progress is Progress kept with atomics: the passes update it, a scrape
// reads it, neither waits for the other.
type progress struct {
	gcRuns, gcChunks, gcBytes, gcOrphans, gcLast atomic.Int64
	gcRunning                                    atomic.Bool
	sumPasses, sumFiles, sumSkipped, sumLast     atomic.Int64
	sumBytes                                     atomic.Int64
	sumRunning                                   atomic.Bool
}

// Progress returns the background work's counts so far.
func (d *Drive) Progress() Progress {
	p := &d.progress
	unix := func(ns int64) time.Time {
		if ns == 0 {
			return time.Time{}
		}
		return time.Unix(0, ns)
	}
	return Progress{
		GCRuns: p.gcRuns.Load(), GCRunning: p.gcRunning.Load(), GCChunks: p.gcChunks.Load(),
		GCBytes: p.gcBytes.Load(), GCOrphans: p.gcOrphans.Load(), GCLast: unix(p.gcLast.Load()),
		SumPasses: p.sumPasses.Load(), SumRunning: p.sumRunning.Load(), SumFiles: p.sumFiles.Load(),
		SumSkipped: p.sumSkipped.Load(), SumBytes: p.sumBytes.Load(), SumLastFilled: unix(p.sumLast.Load()),
	}
}
