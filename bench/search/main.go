// Command search measures name search (drive.Search) on a SQLite drive
// with many files: the first page (100 hits, newest first) of a rare
// term, a common term, a glob and a two-letter term, each beside the same
// answer got by walking the tree (drive.Tree of the whole drive, then
// filter and sort), the way a search without an index would.
//
// The drive is built directly through the metadata store (meta's write
// transactions, -batch files each: no chunk bytes, empty files), so
// building it costs a few minutes at most; the figure is the search.
//
// Run: go run ./bench/search [-files 1000000 -runs 21 -walkruns 3]
package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"netdisk/drive"
	"netdisk/meta"
)

func main() {
	files := flag.Int("files", 1_000_000, "files in the drive")
	perDir := flag.Int("per-dir", 1000, "files per folder")
	batch := flag.Int("batch", 50_000, "files per write transaction while building")
	runs := flag.Int("runs", 21, "timed searches per term (the median is reported)")
	walkRuns := flag.Int("walkruns", 3, "timed tree walks per term")
	keep := flag.String("dir", "", "data directory to build in and keep, or to reuse when it holds the drive already (default: a temporary one, removed)")
	flag.Parse()
	log.SetFlags(0)
	ctx := context.Background()

	dir := *keep
	if dir == "" {
		d, err := os.MkdirTemp("", "bench-search-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	l, err := drive.OpenLocal(ctx, drive.LocalConfig{Dir: dir, Config: drive.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	start := time.Now()
	u, err := l.Meta.UserByName(ctx, "bench")
	if err != nil {
		if u, err = l.Meta.CreateUser(ctx, "bench", "x", false, 0); err != nil {
			log.Fatal(err)
		}
		if err := build(ctx, l.Meta, u.ID, *files, *perDir, *batch); err != nil {
			log.Fatal(err)
		}
	}
	built := time.Since(start)
	st, _ := os.Stat(filepath.Join(dir, "meta.db"))
	fmt.Printf("name search: %d files in %d folders of one user, SQLite (built or opened in %v; meta.db %.0f MiB)\n",
		*files, (*files+*perDir-1) / *perDir, built.Round(time.Second), float64(st.Size())/(1<<20))
	fmt.Printf("walk/search is the ratio of CPU times (the machine's load inflates wall times)\n")
	fmt.Printf("first page of %d hits, newest first; median of %d searches, of %d walks\n\n", drive.DefaultSearchLimit, *runs, *walkRuns)
	fmt.Printf("%-24s %9s %21s %21s %12s\n", "", "", "search", "tree walk", "")
	fmt.Printf("%-24s %9s %10s %10s %10s %10s %12s\n", "query", "matches", "wall", "cpu", "wall", "cpu", "walk/search")

	for _, c := range []struct {
		label string
		q     drive.SearchQuery
	}{
		{"rare term 'zanzibar'", drive.SearchQuery{Pattern: "zanzibar"}},
		{"common term 'img'", drive.SearchQuery{Pattern: "img"}},
		{"glob 'invoice-*.pdf'", drive.SearchQuery{Pattern: "invoice-*.pdf", Glob: true}},
		{"two letters 'q3'", drive.SearchQuery{Pattern: "q3"}},
		{"one letter 'x'", drive.SearchQuery{Pattern: "x"}},
	} {
		var page drive.SearchPage
		search, searchCPU := median(*runs, func() {
			if page, err = l.Drive.Search(ctx, u.ID, c.q); err != nil {
				log.Fatal(err)
			}
		})
		var walked []meta.Node
		var matches int
		walk, walkCPU := median(*walkRuns, func() {
			walked, matches = treeWalk(ctx, l.Drive, u.ID, c.q)
		})
		if !samePaths(page.Hits, walked) {
			log.Fatalf("%s: the search and the walk disagree:\n%v\n%v", c.label, paths(page.Hits), paths(walked))
		}
		fmt.Printf("%-24s %9d %8.1fms %8.1fms %8.0fms %8.0fms %11.0fx\n", c.label, matches,
			ms(search), ms(searchCPU), ms(walk), ms(walkCPU), float64(walkCPU)/float64(max(searchCPU, time.Microsecond)))
	}
}

// build creates files empty files named as a camera, a scanner and an
// office would name them, perDir to a folder, with times rising through
// the drive and shuffled within a folder; a few hold the rare word.
func build(ctx context.Context, s *meta.SQLStore, uid int64, files, perDir, batch int) error {
	rng := rand.New(rand.NewPCG(1, 2))
	empty := md5.Sum(nil)
	f := meta.NewFile{FileHash: hex.EncodeToString(empty[:])}
	t0 := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC)
	for done := 0; done < files; {
		err := s.Tx(ctx, func(tx *meta.Tx) error {
			for n := 0; n < batch && done < files; n, done = n+1, done+1 {
				if done%perDir == 0 {
					if _, _, err := s.MkdirTx(ctx, tx, uid, fmt.Sprintf("/d%05d", done/perDir), t0, 0, meta.NoGrowthLimit); err != nil {
						return err
					}
				}
				f.ModTime = t0.Add(time.Duration(done)*time.Minute + time.Duration(rng.IntN(600))*time.Second)
				if _, _, err := s.CommitFileTx(ctx, tx, uid, fmt.Sprintf("/d%05d/%s", done/perDir, name(rng, done)), f, meta.NoGrowthLimit); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "\rbuilt %d/%d", done, files)
	}
	fmt.Fprintln(os.Stderr)
	return nil
}

// name makes the i-th file's name: about 45% camera images (IMG_…, a
// common term), 20% documents, 15% invoices (the glob's), 10% reports by
// quarter (the two letters 'q3' in a quarter of them), 10% music; every
// 100,000th holds 'zanzibar'.
func name(rng *rand.Rand, i int) string {
	y := 2015 + rng.IntN(11)
	var s string
	switch r := rng.IntN(100); {
	case r < 45:
		s = fmt.Sprintf("IMG_%d%02d%02d_%06d.jpg", y, 1+rng.IntN(12), 1+rng.IntN(28), rng.IntN(1_000_000))
	case r < 65:
		s = fmt.Sprintf("%s %s %d.%s", pick(rng, "notes", "minutes", "draft", "letter", "summary", "plan"),
			pick(rng, "budget", "team", "garden", "house", "car", "trip"), rng.IntN(1000), pick(rng, "docx", "odt", "txt", "md"))
	case r < 80:
		s = fmt.Sprintf("invoice-%d-%05d.pdf", y, rng.IntN(100_000))
	case r < 90:
		s = fmt.Sprintf("report-Q%d-%d-v%d.xlsx", 1+rng.IntN(4), y, rng.IntN(10))
	default:
		s = fmt.Sprintf("%02d - %s %s.mp3", 1+rng.IntN(20), pick(rng, "Blue", "Night", "Road", "River", "Song"), pick(rng, "Moon", "Home", "Again", "Light"))
	}
	if i%100_000 == 99_999 {
		s = "zanzibar " + s
	}
	return s
}

func pick(rng *rand.Rand, words ...string) string { return words[rng.IntN(len(words))] }

// treeWalk answers q the way a drive without an index would: every node
// below the root (drive.Tree), filtered by name, sorted newest first, the
// first page kept. It returns the page and how many matched in all.
func treeWalk(ctx context.Context, d *drive.Drive, uid int64, q drive.SearchQuery) ([]meta.Node, int) {
	all, err := d.Tree(ctx, uid, "/", 1<<30)
	if err != nil {
		log.Fatal(err)
	}
	want := strings.ToLower(q.Pattern)
	var hits []meta.Node
	for _, n := range all {
		name := strings.ToLower(n.Name())
		var ok bool
		if q.Glob {
			ok, _ = filepath.Match(want, name)
		} else {
			ok = strings.Contains(name, want)
		}
		if ok {
			hits = append(hits, n)
		}
	}
	slices.SortFunc(hits, func(a, b meta.Node) int {
		if c := b.ModTime.Compare(a.ModTime); c != 0 {
			return c
		}
		return int(b.ID - a.ID)
	})
	return hits[:min(len(hits), drive.DefaultSearchLimit)], len(hits)
}

// median runs fn n times and returns the median wall time and the median
// CPU time of the process (user + system: on a shared, loaded machine the
// wall time includes waiting for a core, the CPU time does not).
func median(n int, fn func()) (wall, cpu time.Duration) {
	ws, cs := make([]time.Duration, n), make([]time.Duration, n)
	for i := range ws {
		c := cpuTime()
		t := time.Now()
		fn()
		ws[i], cs[i] = time.Since(t), cpuTime()-c
	}
	slices.Sort(ws)
	slices.Sort(cs)
	return ws[n/2], cs[n/2]
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func paths(ns []meta.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Path
	}
	return out
}

func samePaths(a, b []meta.Node) bool { return slices.Equal(paths(a), paths(b)) }
