package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
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
	var g, w []string
	for k := range got {
		g = append(g, k)
	}
	for k := range want {
		w = append(w, k)
	}
	slices.Sort(g)
	slices.Sort(w)
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
		mustCLI(t, d, "push", src, tc.dest)
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
