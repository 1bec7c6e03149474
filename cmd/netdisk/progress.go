package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
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
	failures   []string
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
		// Printed at the end, and only when there are several: one
		// failure is the command's error line itself.
		r.failures = append(r.failures, fmt.Sprintf("failed %s: %s", e.Local, e.Error))
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

// finish prints the summary: one line, or none when the push failed
// before anything was done (the error line says it all).
func (r *pushReporter) finish(res client.PushResult, elapsed time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		r.bar.Finish()
		fmt.Fprintln(r.errOut)
	}
	if r.enc != nil {
		r.enc.Encode(map[string]any{"type": "summary", "files": res.Files, "failed": res.Failed, "instant": res.Instant,
			"bytesSent": res.BytesSent, "bytesSkipped": res.BytesSkip, "skipped": res.Skipped,
			"skippedBytes": res.SkippedBytes, "deleted": res.Deleted, "seconds": elapsed.Seconds()})
		return
	}
	if len(r.failures) > 1 {
		for _, l := range r.failures {
			r.line("%s", l)
		}
	}
	ok := res.Files - res.Failed
	if err != nil && ok == 0 && res.Skipped == 0 && res.Deleted == 0 {
		return
	}
	fmt.Fprintln(r.out, summaryLine(ok, res.BytesSent, "sent", res.Skipped, elapsed, extras{
		instant: res.Instant, dedup: res.BytesSkip, deleted: res.Deleted, failed: res.Failed}))
}

// extras are the parts of a summary line shown only when not zero.
type extras struct {
	instant        int
	dedup, resumed int64
	deleted        int
	failed         int
}

// summaryLine is push's and pull's last line: "N files, X sent, M skipped,
// in T", with what else happened in parentheses.
func summaryLine(files int, bytes int64, verb string, skipped int, elapsed time.Duration, x extras) string {
	s := fmt.Sprintf("%d files, %s %s, %d skipped", files, ibytes(bytes), verb, skipped)
	var more []string
	if x.instant > 0 {
		more = append(more, fmt.Sprintf("%d instant", x.instant))
	}
	if x.dedup > 0 {
		more = append(more, ibytes(x.dedup)+" not sent (dedup/resume)")
	}
	if x.resumed > 0 {
		more = append(more, ibytes(x.resumed)+" resumed from .part")
	}
	if x.deleted > 0 {
		more = append(more, fmt.Sprintf("%d deleted", x.deleted))
	}
	if x.failed > 0 {
		more = append(more, fmt.Sprintf("%d failed", x.failed))
	}
	if len(more) > 0 {
		s += " (" + strings.Join(more, ", ") + ")"
	}
	return s + ", in " + elapsed.Round(time.Millisecond).String()
}
