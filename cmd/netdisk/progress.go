package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"netdisk/chunker"
	"netdisk/client"
)

// How push and pull show progress: a bar on a terminal, plain lines when the
// output is a pipe or a file, a JSON line per event with --json.

type outputMode int

const (
	outPlain outputMode = iota
	outBar
	outJSON
)

func pickOutput(jsonFlag bool, w io.Writer) outputMode {
	if jsonFlag {
		return outJSON
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return outBar
	}
	return outPlain
}

// pushReporter turns PushEvents into output. Events arrive serialized.
type pushReporter struct {
	mode    outputMode
	out     io.Writer // plain lines and JSON
	errOut  io.Writer // the bar's terminal
	bar     *progressbar.ProgressBar
	enc     *json.Encoder
	mu      sync.Mutex
	counted map[string]int64 // bytes of each file already added to the bar
	// rechecking: files whose merge found the content changed; their chunks,
	// checked again, are already on the bar.
	rechecking map[string]bool
	skipped    int // chunks completed without sending their bytes
	sent       int
}

func newPushReporter(mode outputMode, out, errOut io.Writer, total int64, files int) *pushReporter {
	r := &pushReporter{mode: mode, out: out, errOut: errOut, counted: map[string]int64{}, rechecking: map[string]bool{}}
	switch mode {
	case outJSON:
		r.enc = json.NewEncoder(out)
	case outBar:
		r.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(errOut),
			progressbar.OptionShowBytes(true),
			progressbar.OptionUseIECUnits(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionSetDescription(fmt.Sprintf("push %d file(s)", files)),
			progressbar.OptionFullWidth(),
		)
	}
	return r
}

func (r *pushReporter) add(file string, n int64) {
	r.counted[file] += n
	if r.bar != nil {
		r.bar.Add64(n)
	}
}

func (r *pushReporter) on(e client.PushEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.enc != nil {
		r.enc.Encode(e)
		return
	}
	switch e.Type {
	case "pipeline":
		pe := e.Event
		switch pe.Kind {
		case chunker.ChunkDone:
			if !r.rechecking[e.Local] {
				r.add(e.Local, pe.Size)
			}
			if pe.How == chunker.HowUploaded {
				r.sent++
			} else {
				r.skipped++
			}
			if r.bar != nil {
				r.bar.Describe(fmt.Sprintf("chunks: %d sent, %d skipped (dedup/resume)", r.sent, r.skipped))
			}
		case chunker.ChunkRetry:
			if pe.Index < 0 {
				r.line("retry %s (attempt %d): %s", e.Remote, pe.Attempt, pe.Error)
			} else {
				r.line("retry %s chunk %d (attempt %d): %s", e.Remote, pe.Index, pe.Attempt, pe.Error)
			}
		case chunker.MergeFailed:
			r.rechecking[e.Local] = true
			r.line("merge of %s failed: %s", e.Remote, pe.Error)
		case chunker.QueueAborted:
			r.line("aborted %s: chunk %d: %s", e.Remote, pe.Index, pe.Error)
		}
	case "done":
		if rest := e.Size - r.counted[e.Local]; rest > 0 {
			if e.Instant {
				r.skipped++
			}
			r.add(e.Local, rest)
		}
		how := ""
		if e.Instant {
			how = " (instant: content already on the server)"
		}
		if r.mode == outPlain {
			r.line("pushed %s -> %s (%s)%s", e.Local, e.Remote, ibytes(e.Size), how)
		}
	case "error":
		r.line("failed %s: %s", e.Local, e.Error)
	}
}

// line prints a message above the bar (or as a plain line).
func (r *pushReporter) line(format string, a ...any) {
	if r.bar != nil {
		r.bar.Clear()
		fmt.Fprintf(r.errOut, "\r"+format+"\n", a...)
		return
	}
	fmt.Fprintf(r.out, format+"\n", a...)
}

func (r *pushReporter) finish(res client.PushResult, elapsed time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		r.bar.Finish()
		fmt.Fprintln(r.errOut)
	}
	summary := map[string]any{"type": "summary", "files": res.Files, "failed": res.Failed, "instant": res.Instant,
		"bytesSent": res.BytesSent, "bytesSkipped": res.BytesSkip, "seconds": elapsed.Seconds()}
	if r.enc != nil {
		r.enc.Encode(summary)
		return
	}
	rate := float64(res.BytesSent+res.BytesSkip) / max(elapsed.Seconds(), 1e-9)
	fmt.Fprintf(r.out, "%d file(s), %d failed, %d instant; %s sent, %s skipped by dedup/resume, %s in %s (%s/s)\n",
		res.Files, res.Failed, res.Instant, ibytes(res.BytesSent), ibytes(res.BytesSkip),
		ibytes(res.BytesSent+res.BytesSkip), elapsed.Round(time.Millisecond), ibytes(int64(rate)))
}
