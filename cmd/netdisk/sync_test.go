package main

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/testutil"
)

// syncDaemon is a daemon cutting 64 KiB chunks, so a file of a few MiB is
// many chunks and a push can be stopped part-way.
func syncDaemon(t *testing.T) (*testutil.Daemon, *client.Client) {
	t.Helper()
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	return d, client.New(d.URL, "admin", d.AdminPass)
}

// writeTree writes files (relative name → content) under dir with mode
// 0644 and returns dir.
func writeTree(t *testing.T, dir string, files map[string][]byte) string {
	t.Helper()
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// remoteFiles returns the files under root by path relative to root, with
// their file hashes.
func remoteFiles(t *testing.T, c *client.Client, root string) map[string]apitype.Node {
	t.Helper()
	tree, err := c.Tree(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]apitype.Node{}
	for rel, n := range tree {
		if !n.IsDir {
			out[rel] = n
		}
	}
	return out
}

func sameNames(t *testing.T, what string, got map[string]apitype.Node, want map[string][]byte) {
	t.Helper()
	g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))
	if !slices.Equal(g, w) {
		t.Fatalf("%s: remote files %v, want %v", what, g, w)
	}
	for k, b := range want {
		if got[k].FileHash != fileHash(b) {
			t.Fatalf("%s: %s has other content", what, k)
		}
	}
}

// fileHash is the server's file hash of b with 64 KiB chunks.
func fileHash(b []byte) string {
	const cs = 64 << 10
	var md5s []string
	for off := 0; off < len(b); off += cs {
		md5s = append(md5s, testutil.MD5Hex(b[off:min(off+cs, len(b))]))
	}
	return testutil.MD5Hex([]byte(strings.Join(md5s, "")))
}

// pushKilledAfter starts `netdisk push --json args...` and kills it
// (SIGKILL: no chance to clean up, as a crash or a lost machine) once the
// server has acknowledged n chunks.
func pushKilledAfter(t *testing.T, d *testutil.Daemon, n int, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testutil.Binary(t), append([]string{"push", "--json", "--concurrency", "1"}, args...)...)
	cmd.Env = cliEnv(map[string]string{"NETDISK_SERVER": d.URL, "NETDISK_USER": "admin", "NETDISK_PASSWORD": d.AdminPass})
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	var last string
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() && done < n {
		last = sc.Text()
		var e struct {
			Type     string `json:"type"`
			Pipeline struct {
				Event string `json:"event"`
				How   string `json:"how"`
			} `json:"pipeline"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "pipeline" && e.Pipeline.Event == "ChunkDone" {
			done++
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if done < n {
		t.Fatalf("push ended after %d chunks, before it could be killed after %d: %s\n%s", done, n, last, stderr.String())
	}
}

// An interrupted push of a directory, run again as it was, continues into
// the same place: the same tree as one uninterrupted push, the half-sent
// file's open upload resumed, and the quota counting every file once. Both
// forms of the trailing-slash rule, each run twice.
func TestPushRerunAfterKillLandsInTheSamePlace(t *testing.T) {
	d, c := syncDaemon(t)
	ctx := context.Background()
	var total int64
	for _, tc := range []struct {
		slash, dest, root string
	}{
		{"", "/dest", "tree"},
		{"/", "/flat", ""},
	} {
		// Content of its own per case: the same content again would be
		// an instant upload, with nothing to interrupt.
		files := map[string][]byte{
			"a.txt":       []byte("alpha " + tc.dest),
			"sub/b.txt":   []byte("beta " + tc.dest),
			"sub/big.bin": testutil.RandBytes(9 << 20), // over the 8 MiB small-file limit: chunked
		}
		for _, b := range files {
			total += int64(len(b))
		}
		src := writeTree(t, filepath.Join(t.TempDir(), "tree"), files) + tc.slash
		pushKilledAfter(t, d, 20, src, tc.dest)
		// The re-run resumes the open upload: the 20 chunks the server
		// acknowledged are not sent again, nor the finished small files.
		if s := pushSummary(t, d, src, tc.dest); s["bytesSent"] > 9<<20-20*64<<10 || s["skipped"] != 2 {
			t.Fatalf("re-run of push %s %s: %v, want the 2 small files skipped and at most the chunks not acknowledged sent", src, tc.dest, s)
		}
		sameNames(t, "push "+src+" "+tc.dest+" twice", remoteFiles(t, c, tc.dest), prefixed(files, tc.root))
		// And once more, uninterrupted: nothing moves.
		mustCLI(t, d, "push", src, tc.dest)
		sameNames(t, "push "+src+" "+tc.dest+" thrice", remoteFiles(t, c, tc.dest), prefixed(files, tc.root))
	}
	q, err := c.Quota(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if q.Finished != total || q.Uploading != 0 || q.Unfinished != 0 {
		t.Fatalf("quota after two trees of %d bytes: %+v, want them finished once and no open upload", total, q)
	}
}

// prefixed returns files with each name under dir ("" leaves them).
func prefixed(files map[string][]byte, dir string) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range files {
		out[path.Join(dir, k)] = v
	}
	return out
}

// push stores every file's mtime (to the nanosecond) and permission bits,
// on the one-request and the chunked path alike; pull gives them back, to
// files and directories.
func TestPushPullKeepMtimeAndMode(t *testing.T) {
	d, c := syncDaemon(t)
	files := map[string][]byte{
		"small.txt":     []byte("small"),
		"sub/run.sh":    []byte("#!/bin/sh\n"),
		"sub/big.bin":   testutil.RandBytes(9 << 20), // chunked
		"sub/deep/x.md": []byte("x"),
	}
	src := writeTree(t, filepath.Join(t.TempDir(), "tree"), files)
	base := time.Date(2021, 3, 4, 5, 6, 7, 123456789, time.UTC)
	modes := map[string]os.FileMode{"small.txt": 0o600, "sub/run.sh": 0o755, "sub/big.bin": 0o640, "sub/deep/x.md": 0o444}
	i := 0
	for name, m := range modes {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, time.Time{}, base.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
		i++
	}
	os.Chmod(filepath.Join(src, "sub", "deep"), 0o700)
	dirTime := base.Add(-time.Hour)
	os.Chtimes(filepath.Join(src, "sub", "deep"), time.Time{}, dirTime)
	mustCLI(t, d, "push", src, "/")
	got := remoteFiles(t, c, "/tree")
	for name := range files {
		st, err := os.Stat(filepath.Join(src, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		n := got[name]
		if !n.MTime.Time.Equal(st.ModTime()) || n.Mode != uint32(st.Mode().Perm()) {
			t.Errorf("pushed %s: mtime %v mode %o, want %v %o", name, n.MTime.Time, n.Mode, st.ModTime(), st.Mode().Perm())
		}
	}
	if n, err := c.Stat(context.Background(), "/tree/sub/deep"); err != nil || !n.MTime.Time.Equal(dirTime) || n.Mode != 0o700 {
		t.Errorf("pushed directory: %+v %v, want mtime %v mode 700", n, err, dirTime)
	}
	out := t.TempDir()
	mustCLI(t, d, "pull", "/tree", out)
	for name := range files {
		want, _ := os.Stat(filepath.Join(src, filepath.FromSlash(name)))
		st, err := os.Stat(filepath.Join(out, "tree", filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if !st.ModTime().Equal(want.ModTime()) || st.Mode().Perm() != want.Mode().Perm() {
			t.Errorf("pulled %s: mtime %v mode %o, want %v %o", name, st.ModTime(), st.Mode().Perm(), want.ModTime(), want.Mode().Perm())
		}
	}
	st, err := os.Stat(filepath.Join(out, "tree", "sub", "deep"))
	if err != nil {
		t.Fatal(err)
	}
	if !st.ModTime().Equal(dirTime) || st.Mode().Perm() != 0o700 {
		t.Errorf("pulled directory: mtime %v mode %o, want %v 700", st.ModTime(), st.Mode().Perm(), dirTime)
	}
}

// pushSummary runs push --json with args and returns its summary event.
func pushSummary(t *testing.T, d *testutil.Daemon, args ...string) map[string]float64 {
	t.Helper()
	out := mustCLI(t, d, append([]string{"push", "--json"}, args...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum["type"] != "summary" {
		t.Fatalf("push %v: last line %q is no summary (%v)", args, lines[len(lines)-1], err)
	}
	m := map[string]float64{}
	for k, v := range sum {
		if f, ok := v.(float64); ok {
			m[k] = f
		}
	}
	return m
}

// A re-run skips unchanged files (same size and mtime), --checksum looks at
// the content instead, --dry-run changes nothing, --delete mirrors; pull
// the same way in the other direction. The summary is one line.
func TestPushPullSkipChecksumDryRunDelete(t *testing.T) {
	d, c := syncDaemon(t)
	ctx := context.Background()
	files := map[string][]byte{"a.txt": []byte("aaaa"), "b.txt": []byte("bbbb"), "sub/c.bin": testutil.RandBytes(9 << 20)}
	src := writeTree(t, filepath.Join(t.TempDir(), "tree"), files)
	if s := pushSummary(t, d, src, "/"); s["files"] != 3 || s["skipped"] != 0 {
		t.Fatalf("first push: %v", s)
	}
	if s := pushSummary(t, d, src, "/"); s["files"] != 0 || s["skipped"] != 3 || s["bytesSent"] != 0 {
		t.Fatalf("unchanged re-run: %v, want 3 skipped and nothing sent", s)
	}
	// Touched (same content, new mtime): committed again without the
	// bytes (instant), the new mtime stored; by one request and by chunks.
	touched := time.Date(2024, 5, 6, 7, 8, 9, 10, time.UTC)
	for _, name := range []string{"b.txt", "sub/c.bin"} {
		os.Chtimes(filepath.Join(src, filepath.FromSlash(name)), time.Time{}, touched)
	}
	if s := pushSummary(t, d, src, "/"); s["files"] != 2 || s["instant"] != 2 || s["bytesSent"] != 0 {
		t.Fatalf("re-run after touch: %v, want 2 instant files and nothing sent", s)
	}
	for _, name := range []string{"b.txt", "sub/c.bin"} {
		if n, err := c.Stat(ctx, "/tree/"+name); err != nil || !n.MTime.Time.Equal(touched) {
			t.Fatalf("%s after touch and push: %+v %v, want mtime %v", name, n, err, touched)
		}
	}
	// Same size and mtime, other content: skipped unless --checksum.
	a := filepath.Join(src, "a.txt")
	st, _ := os.Stat(a)
	os.WriteFile(a, []byte("AAAA"), 0o644)
	os.Chtimes(a, time.Time{}, st.ModTime())
	if s := pushSummary(t, d, src, "/"); s["files"] != 0 {
		t.Fatalf("size+mtime re-run sent %v files", s["files"])
	}
	if s := pushSummary(t, d, "--checksum", src, "/"); s["files"] != 1 || s["skipped"] != 2 {
		t.Fatalf("--checksum: %v, want a.txt sent and 2 skipped", s)
	}
	sameNames(t, "after --checksum", remoteFiles(t, c, "/tree"), map[string][]byte{"a.txt": []byte("AAAA"), "b.txt": files["b.txt"], "sub/c.bin": files["sub/c.bin"]})

	// --dry-run names what would change and changes nothing.
	os.WriteFile(filepath.Join(src, "new.txt"), []byte("new"), 0o644)
	os.Remove(filepath.Join(src, "b.txt"))
	out := mustCLI(t, d, "push", "--dry-run", "--delete", src, "/")
	if !strings.Contains(out, "new.txt -> /tree/new.txt") || !strings.Contains(out, "delete /tree/b.txt") || strings.Contains(out, "c.bin") {
		t.Fatalf("--dry-run --delete printed:\n%s", out)
	}
	if _, err := c.Stat(ctx, "/tree/new.txt"); client.StatusOf(err) != 404 {
		t.Fatalf("--dry-run sent new.txt: %v", err)
	}
	if _, err := c.Stat(ctx, "/tree/b.txt"); err != nil {
		t.Fatalf("--dry-run deleted b.txt: %v", err)
	}
	// Without --delete the remote keeps b.txt; with it, it mirrors.
	mustCLI(t, d, "push", src, "/")
	if _, err := c.Stat(ctx, "/tree/b.txt"); err != nil {
		t.Fatalf("push without --delete deleted b.txt: %v", err)
	}
	out = mustCLI(t, d, "push", "--delete", src, "/")
	if !regexp.MustCompile(`^0 files, 0 B sent, 3 skipped \(1 deleted\), in \S+\n$`).MatchString(out) {
		t.Fatalf("push --delete summary %q", out)
	}
	sameNames(t, "after --delete", remoteFiles(t, c, "/tree"), map[string][]byte{"a.txt": []byte("AAAA"), "new.txt": []byte("new"), "sub/c.bin": files["sub/c.bin"]})

	// pull: a second run skips, --dry-run --delete names the extra local
	// file, --delete removes it, --checksum fetches a same-size-same-mtime
	// change.
	dst := t.TempDir()
	mustCLI(t, d, "pull", "/tree", dst)
	out = mustCLI(t, d, "pull", "/tree", dst)
	if !regexp.MustCompile(`^0 files, 0 B received, 3 skipped, in \S+\n$`).MatchString(out) {
		t.Fatalf("pull re-run summary %q", out)
	}
	extraFile := filepath.Join(dst, "tree", "sub", "extra.txt")
	os.WriteFile(extraFile, []byte("x"), 0o644)
	if out := mustCLI(t, d, "pull", "--dry-run", "--delete", "/tree", dst); !strings.Contains(out, "delete "+extraFile) {
		t.Fatalf("pull --dry-run --delete printed:\n%s", out)
	}
	if _, err := os.Stat(extraFile); err != nil {
		t.Fatalf("pull --dry-run deleted: %v", err)
	}
	pa := filepath.Join(dst, "tree", "a.txt")
	st, _ = os.Stat(pa)
	os.WriteFile(pa, []byte("zzzz"), 0o644)
	os.Chtimes(pa, time.Time{}, st.ModTime())
	mustCLI(t, d, "pull", "--delete", "/tree", dst)
	if b, _ := os.ReadFile(pa); string(b) != "zzzz" {
		t.Fatalf("pull fetched a same size and mtime file without --checksum: %q", b)
	}
	if _, err := os.Stat(extraFile); !os.IsNotExist(err) {
		t.Fatalf("pull --delete kept %s: %v", extraFile, err)
	}
	mustCLI(t, d, "pull", "--checksum", "/tree", dst)
	if b, _ := os.ReadFile(pa); string(b) != "AAAA" {
		t.Fatalf("pull --checksum kept the changed file: %q", b)
	}

	// A file that became a directory: a mirror replaces it, both ways.
	os.Remove(filepath.Join(src, "new.txt"))
	writeTree(t, filepath.Join(src, "new.txt"), map[string][]byte{"inner.txt": []byte("in")})
	mustCLI(t, d, "push", "--delete", src, "/")
	sameNames(t, "after a file became a directory", remoteFiles(t, c, "/tree"), map[string][]byte{"a.txt": []byte("AAAA"), "new.txt/inner.txt": []byte("in"), "sub/c.bin": files["sub/c.bin"]})
	mustCLI(t, d, "pull", "--delete", "/tree", dst)
	if b, err := os.ReadFile(filepath.Join(dst, "tree", "new.txt", "inner.txt")); string(b) != "in" {
		t.Fatalf("pull --delete of a file that became a directory: %q %v", b, err)
	}
}

// A push that fails says so in one line on stderr and prints no summary
// before it (nothing was done).
func TestPushFailureIsOneLine(t *testing.T) {
	d, c := syncDaemon(t)
	if _, err := c.AdminAddUser(context.Background(), apitype.NewUser{Name: "carol", Password: "carol-pass-1", Quota: 100 << 10}); err != nil {
		t.Fatal(err)
	}
	dir := writeTree(t, t.TempDir(), map[string][]byte{"f.bin": testutil.RandBytes(300 << 10)})
	env := map[string]string{"NETDISK_USER": "carol", "NETDISK_PASSWORD": "carol-pass-1"}
	for _, args := range [][]string{{"push", filepath.Join(dir, "f.bin"), "/"}, {"push", dir, "/"}, {"pull", "/nope", dir}} {
		r := runCLI(t, d, env, args...)
		if r.code == 0 || r.stdout != "" || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("netdisk %v: exit %d, stdout %q, stderr %q; want one error line and nothing else", args, r.code, r.stdout, r.stderr)
		}
	}
}

// The open uploads an interrupted push leaves are listed by `uploads ls`
// and their reservation freed at once by `uploads abort` (by ID or --all).
func TestUploadsLsAbortFreeTheQuota(t *testing.T) {
	d, c := syncDaemon(t)
	ctx := context.Background()
	if r := mustCLI(t, d, "uploads", "ls"); r != "no open uploads\n" {
		t.Fatalf("uploads ls with none: %q", r)
	}
	src := writeTree(t, t.TempDir(), map[string][]byte{"big.bin": testutil.RandBytes(9 << 20)})
	pushKilledAfter(t, d, 10, filepath.Join(src, "big.bin"), "/")
	other, err := c.Init(ctx, "/other.bin", 5<<20, "")
	if err != nil {
		t.Fatal(err)
	}
	q, _ := c.Quota(ctx)
	if q.Uploading != 9<<20+5<<20 || q.Unfinished < 10*64<<10 {
		t.Fatalf("quota with two open uploads: %+v", q)
	}
	out := mustCLI(t, d, "uploads", "ls")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], other.UploadID+"  /other.bin") || !strings.Contains(lines[2], " /big.bin ") ||
		!strings.HasPrefix(lines[3], "2 open uploads reserve 14 MiB") {
		t.Fatalf("uploads ls:\n%s", out)
	}
	var listed []apitype.OpenUpload
	if err := json.Unmarshal([]byte(mustCLI(t, d, "uploads", "ls", "--json")), &listed); err != nil || len(listed) != 2 ||
		listed[1].Path != "/big.bin" || listed[1].Size != 9<<20 || listed[1].Received < 10*64<<10 ||
		!listed[1].Expires.Time.Equal(listed[1].Touched.Time.Add(72*time.Hour)) {
		t.Fatalf("uploads ls --json: %+v %v", listed, err)
	}
	failCLI(t, d, nil, 1, "abort 0123456789abcdef0123456789abcdef: unknown or expired upload session", "uploads", "abort", "0123456789abcdef0123456789abcdef")
	if out := mustCLI(t, d, "uploads", "abort", other.UploadID); out != "aborted 1 uploads\n" {
		t.Fatalf("uploads abort ID: %q", out)
	}
	if q, _ := c.Quota(ctx); q.Uploading != 9<<20 {
		t.Fatalf("quota after aborting one: %+v", q)
	}
	mustCLI(t, d, "uploads", "abort", "--all")
	if q, _ := c.Quota(ctx); q.Uploading != 0 || q.Unfinished != 0 {
		t.Fatalf("quota after uploads abort --all: %+v, want no reservation left", q)
	}
	if open, err := c.Uploads(ctx); err != nil || len(open) != 0 {
		t.Fatalf("open uploads after abort --all: %+v %v", open, err)
	}
}

// A file that changed size after its push was interrupted: the re-run's
// upload replaces the stale one instead of reserving the quota beside it.
func TestPushRerunAfterChangeAbortsTheStaleUpload(t *testing.T) {
	d, c := syncDaemon(t)
	src := writeTree(t, t.TempDir(), map[string][]byte{"big.bin": testutil.RandBytes(9 << 20)})
	big := filepath.Join(src, "big.bin")
	pushKilledAfter(t, d, 10, big, "/")
	f, err := os.OpenFile(big, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("one more line\n"))
	f.Close()
	mustCLI(t, d, "push", big, "/")
	q, err := c.Quota(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if q.Finished != 9<<20+14 || q.Uploading != 0 || q.Unfinished != 0 {
		t.Fatalf("quota after the re-run: %+v, want the file finished and no upload left open", q)
	}
}
