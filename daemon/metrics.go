package daemon

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"netdisk/async"
)

// registerMetrics adds the background work's and the stores' figures to the
// server's /metrics. Each is read at scrape time from the component that
// keeps it (drive.Progress, quota.Guard.FlushStats, lock.Manager.Waiting,
// async.Service.JobsByStatus, the open sessions in the database), so the
// lower layers know nothing of Prometheus. No label names a user or a path.
func (d *Daemon) registerMetrics(reg *prometheus.Registry) {
	now := d.opts.Now
	if now == nil {
		now = time.Now
	}
	started := now()
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	// A scrape must not hang on a store that does not answer.
	scrapeCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 2*time.Second)
	}
	p := d.Drive.Progress
	reg.MustRegister(
		gauge("netdisk_upload_sessions_open", "Upload sessions open (begun, neither merged, aborted nor expired); -1 when the database does not answer.", func() float64 {
			ctx, cancel := scrapeCtx()
			defer cancel()
			n, err := d.Drive.CountOpenSessions(ctx)
			if err != nil {
				return -1
			}
			return float64(n)
		}),
		gauge("netdisk_quota_flush_lag_seconds", "Time since the quota ledger last wrote its due tasks to the database (every second when healthy), on the node running the flushes: how far the database's unfinished bytes may trail the ledger beyond the tasks' own delay.", func() float64 {
			last, _ := d.Quota.FlushStats()
			if last.IsZero() {
				last = started
			}
			return max(0, now().Sub(last).Seconds())
		}),
		counter("netdisk_quota_flushed_tasks_total", "Delayed quota tasks the ledger wrote to the database (each one upload's received bytes, however many chunks).", func() float64 {
			_, n := d.Quota.FlushStats()
			return float64(n)
		}),
		counter("netdisk_gc_runs_total", "Garbage collection passes completed.", func() float64 { return float64(p().GCRuns) }),
		gauge("netdisk_gc_running", "1 while a garbage collection pass runs.", func() float64 { return b2f(p().GCRunning) }),
		counter("netdisk_gc_chunks_collected_total", "Unreferenced chunks garbage collection removed.", func() float64 { return float64(p().GCChunks) }),
		counter("netdisk_gc_bytes_collected_total", "Bytes of the chunks garbage collection removed.", func() float64 { return float64(p().GCBytes) }),
		counter("netdisk_gc_orphan_blobs_total", "Stored chunks without a record (a crash between storing and committing) garbage collection deleted.", func() float64 { return float64(p().GCOrphans) }),
		gauge("netdisk_gc_last_success_timestamp_seconds", "When the last garbage collection pass completed (unix time; 0 before one).", func() float64 {
			if t := p().GCLast; !t.IsZero() {
				return float64(t.UnixNano()) / 1e9
			}
			return 0
		}),
		counter("netdisk_checksum_passes_total", "Checksum passes (SHA-1 and MD5 of files written through the upload API) completed.", func() float64 { return float64(p().SumPasses) }),
		gauge("netdisk_checksum_running", "1 while a checksum pass runs.", func() float64 { return b2f(p().SumRunning) }),
		counter("netdisk_checksum_files_total", "Files the checksum passes gave their checksums.", func() float64 { return float64(p().SumFiles) }),
		counter("netdisk_checksum_read_bytes_total", "Bytes the checksum passes read back from the chunk store (files whose upload did not give them their checksums).", func() float64 { return float64(p().SumBytes) }),
		counter("netdisk_checksum_skipped_total", "Files a checksum pass left for a later one (a chunk could not be read).", func() float64 { return float64(p().SumSkipped) }),
		gauge("netdisk_lock_waiters", "Nodes waiting in the lock queues, all locks together (with --redis, of every daemon sharing it); -1 when the lock state does not answer.", func() float64 {
			ctx, cancel := scrapeCtx()
			defer cancel()
			n, err := d.Locks.Waiting(ctx)
			if err != nil {
				return -1
			}
			return float64(n)
		}),
		asyncJobs{d.Async},
	)
}

// asyncJobs reports the async-download jobs by status, every status always
// present (a series that appears only once non-zero breaks rate queries).
type asyncJobs struct{ s *async.Service }

var asyncJobsDesc = prometheus.NewDesc("netdisk_async_jobs",
	"Async-download jobs alive at the scheduler's last whole pass, by status (ended ones are kept a while for their status).",
	[]string{"status"}, nil)

func (a asyncJobs) Describe(ch chan<- *prometheus.Desc) { ch <- asyncJobsDesc }

func (a asyncJobs) Collect(ch chan<- prometheus.Metric) {
	by := a.s.JobsByStatus()
	for _, st := range []async.Status{async.Pending, async.Running, async.Success, async.Failed, async.Timeout} {
		ch <- prometheus.MustNewConstMetric(asyncJobsDesc, prometheus.GaugeValue, float64(by[st]), string(st))
	}
}
