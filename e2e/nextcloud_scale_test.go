package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/testutil"
)

// genContent is size bytes of a ChaCha8 stream keyed by seed: every file of
// the tree is its own content (nothing deduplicates by accident), made far
// faster than the clients sync it.
func genContent(seed uint64, size int) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	b := make([]byte, size)
	rand.NewChaCha8(key).Read(b)
	return b
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// digests is what a synced folder should hold: relative path (slashes) →
// SHA-256 of the content. Trees are compared by hash, not bytes: the
// full-scale tree does not fit in a test's memory twice.
type digests map[string]string

// put writes b to dir/name (making its folders) and records it.
func (d digests) put(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	d[name] = digest(b)
}

// hashTree hashes every file below dir but the clients' own (the dot files
// and folders at the top: journal, log).
func hashTree(t *testing.T, dir string) digests {
	t.Helper()
	got := digests{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if filepath.Dir(rel) == "." && strings.HasPrefix(rel, ".") && rel != "." {
			if de.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if de.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		got[filepath.ToSlash(rel)] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// isConflictCopy tells the clients' conflict copies ("… (conflicted copy
// DATE).ext" from nextcloudcmd, "…_conflict-DATE.ext" from owncloudcmd) by
// their names; no name of the generated tree holds the word.
func isConflictCopy(name string) bool {
	return strings.Contains(strings.ToLower(filepath.Base(name)), "conflict")
}

// withoutConflicts returns d without the conflict copies, and them apart.
func withoutConflicts(d digests) (rest, conflicts digests) {
	rest, conflicts = digests{}, digests{}
	for n, h := range d {
		if isConflictCopy(n) {
			conflicts[n] = h
		} else {
			rest[n] = h
		}
	}
	return rest, conflicts
}

func sameDigests(t *testing.T, what string, got, want digests) {
	t.Helper()
	var missing, extra, differ []string
	for n, h := range want {
		switch g, ok := got[n]; {
		case !ok:
			missing = append(missing, n)
		case g != h:
			differ = append(differ, n)
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			extra = append(extra, n)
		}
	}
	if len(missing)+len(extra)+len(differ) > 0 {
		slices.Sort(missing)
		slices.Sort(extra)
		slices.Sort(differ)
		t.Fatalf("%s: %d files, want %d; missing %q; not expected %q; contents differ %q",
			what, len(got), len(want), head(missing), head(extra), head(differ))
	}
}

func head(s []string) []string { return s[:min(len(s), 10)] }

// scaleFolders and scaleNames make the tree's paths: spaces (doubled too),
// Greek, Cyrillic, CJK, emoji, a precomposed accent, and the characters a
// client must escape in a URL (# % & + = ; , @ ' $ ! [ ] { }). Not those
// Windows forbids (? : * " < > | \): owncloudcmd leaves such a name out
// ("not supported on this file system") wherever it runs.
var (
	scaleFolders = []string{"Fotos 2024", "Ελληνικά", "файлы и папки", "中文 目录", "a#b%c&d+e=f",
		"docs (old) [2]", "emoji 📷 ok", "café crème", "semi;colon,comma @home", "it's $5!"}
	scaleNames = []string{"ü", "名前", "x+y", "50%", "a&b", "hash#tag", "{braces}", "two  spaces"}
)

// scaleTree writes the full-scale tree into dir: 2,000 files in folders up
// to five deep, sizes from 0 B to 20 MiB — mostly small, as a home folder's
// are, a dozen of megabytes and three of 12–20 MiB, which the clients send
// in chunks. It returns each file's path, by number, and the digests.
func scaleTree(t *testing.T, dir string) ([]string, digests) {
	t.Helper()
	const files = 2000
	rng := rand.New(rand.NewPCG(28, 2000))
	paths := make([]string, files)
	want := digests{}
	for i := range files {
		var parts []string
		if i%100 != 50 { // a few at the top
			parts = append(parts, scaleFolders[i%10])
			if i%3 != 0 {
				parts = append(parts, scaleFolders[(i/10)%10])
			}
			if i%5 == 1 {
				parts = append(parts, fmt.Sprintf("level %d", i%4), "deeper ünïcödé")
			}
			if i%50 == 1 {
				parts = append(parts, "fifth")
			}
		}
		parts = append(parts, fmt.Sprintf("file %04d %s.bin", i, scaleNames[i%len(scaleNames)]))
		var size int
		switch {
		case i == 0:
			size = 20 << 20
		case i == 1:
			size = 20<<20 - 1
		case i == 2:
			size = 12<<20 + 1
		case i < 15:
			size = 1<<20 + rng.IntN(7<<20)
		case i%97 == 0:
			size = 0
		default:
			size = min(int(rng.ExpFloat64()*(8<<10)), 256<<10)
		}
		paths[i] = strings.Join(parts, "/")
		want.put(t, dir, paths[i], genContent(uint64(i)+1, size))
	}
	return paths, want
}

// davPath is the URL path of name (slashes, unescaped) under /dav/.
func davPath(name string) string {
	return (&url.URL{Path: "/dav/" + name}).EscapedPath()
}

// appToken makes an app password for user, as `netdisk token add` does.
func (e *env) appToken(user, pass, name string) string {
	e.t.Helper()
	st, b, _ := e.call("POST", "/api/v1/account/tokens", user, pass, []byte(`{"name":"`+name+`"}`), nil)
	var tok struct{ Token string }
	if st != http.StatusCreated || json.Unmarshal(b, &tok) != nil || tok.Token == "" {
		e.t.Fatalf("make a token: %d %s", st, b)
	}
	return tok.Token
}

// inodes maps each file below dir to its inode: a client that moves a
// file keeps it, one that downloads it again makes a new one.
func inodes(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	m := map[string]uint64{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range ents {
		fi, err := de.Info()
		if err != nil {
			t.Fatal(err)
		}
		m[de.Name()] = fi.Sys().(*syscall.Stat_t).Ino
	}
	return m
}

// The real Nextcloud and ownCloud command-line clients at full scale: a
// 2,000-file tree (0 B to 20 MiB, nested, names with spaces, non-Latin
// letters and URL-escaped characters) synced up with the password and down
// to a second folder with an app password, identical; edits, new files and
// deletes on the server and on each side carried everywhere; a conflict
// keeps the client's conflict copy and loses no version; a folder of 1 GiB
// renamed and then moved on the server costs the next sync under 1 MiB,
// the local copies moved (same inodes), not downloaded; and a sync with
// nothing to do makes a handful of requests, the root's ETag telling the
// client so.
func TestNextcloudClientsSync(t *testing.T) {
	for _, tool := range []string{"nextcloudcmd", "owncloudcmd"} {
		t.Run(tool, func(t *testing.T) {
			// Side by side: each client waits on its requests far more
			// than either side computes, so two share the machine well.
			t.Parallel()
			testClientsAtScale(t, tool)
		})
	}
}

func testClientsAtScale(t *testing.T, tool string) {
	bin := testutil.RequireTool(t, tool)
	e := start(t)
	e.addUser("alice", "alice-pw")
	token := e.appToken("alice", "alice-pw", "laptop")
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	if err := os.Mkdir(b, 0o755); err != nil {
		t.Fatal(err)
	}
	paths, want := scaleTree(t, a)
	sync := func(dir, pass string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		t0 := time.Now()
		if out, err := testutil.SyncClient(ctx, bin, dir, e.d.URL, "alice", pass); err != nil {
			t.Fatalf("%s %s: %v\n%s", tool, filepath.Base(dir), err, lastBytes(out, 3000))
		}
		t.Logf("%s %s: %v", tool, filepath.Base(dir), time.Since(t0).Round(time.Millisecond))
	}

	// 1. Up with the password, down with an app password.
	sync(a, "alice-pw")
	big := genContent(1, 20<<20)
	e.mustGet("alice", "alice-pw", davPath(paths[0]), big)
	sync(b, token)
	sameDigests(t, "b after the first sync down", hashTree(t, b), want)

	// 2. Edits on the server, in a and in b, each side its own files (a
	// new size each: the clients notice a local change by size and mtime
	// in whole seconds); new files; a file and a folder deleted on each
	// side; and one file changed both on the server and in a.
	deleted := map[string]string{ // folder → who deletes it
		scaleFolders[7] + "/" + scaleFolders[3]: "server",
		scaleFolders[1] + "/" + scaleFolders[2]: "a",
		scaleFolders[3] + "/" + scaleFolders[6]: "b",
	}
	under := func(p string) bool {
		for f := range deleted {
			if strings.HasPrefix(p, f+"/") {
				return true
			}
		}
		return false
	}
	next := 3 // each file is picked once, in the order of the tree
	pick := func() string {
		for {
			p := paths[next]
			next++
			if _, ok := want[p]; ok && !under(p) {
				return p
			}
		}
	}
	conflict := pick() // one of the megabyte files
	v1 := want[conflict]
	seed := uint64(1 << 32) // past the tree's seeds
	edit := func() []byte {
		seed++
		return genContent(seed, 1000+int(seed%5000))
	}
	for range 12 {
		p := pick()
		c := edit()
		e.put("alice", "alice-pw", davPath(p), c)
		want[p] = digest(c)
	}
	serverNew := "from the server/новый файл #1.txt"
	c := edit()
	e.mkcol("alice", "alice-pw", davPath("from the server"))
	e.put("alice", "alice-pw", davPath(serverNew), c)
	want[serverNew] = digest(c)
	for _, side := range []struct{ name, dir string }{{"a", a}, {"b", b}} {
		for range 12 {
			want.put(t, side.dir, pick(), edit())
		}
		want.put(t, side.dir, "made in "+side.name+"/sub dir/ü "+side.name+".txt", edit())
		gone := pick()
		if err := os.Remove(filepath.Join(side.dir, filepath.FromSlash(gone))); err != nil {
			t.Fatal(err)
		}
		delete(want, gone)
	}
	gone := pick()
	if st := e.status("DELETE", davPath(gone), "alice", "alice-pw", nil); st != http.StatusNoContent {
		t.Fatalf("DELETE %s on the server: %d", gone, st)
	}
	delete(want, gone)
	for f, side := range deleted {
		switch side {
		case "server":
			if st, msg, _ := e.call("DELETE", davPath(f), "alice", "alice-pw", nil, nil); st != http.StatusNoContent {
				t.Fatalf("DELETE %s on the server: %d %s", f, st, msg)
			}
		default:
			if err := os.RemoveAll(filepath.Join(root, side, filepath.FromSlash(f))); err != nil {
				t.Fatal(err)
			}
		}
		for p := range want {
			if strings.HasPrefix(p, f+"/") {
				delete(want, p)
			}
		}
	}
	fromServer, fromA := edit(), edit()
	e.put("alice", "alice-pw", davPath(conflict), fromServer)
	writeTree(t, a, map[string][]byte{conflict: fromA})
	want[conflict] = digest(fromServer)

	sync(a, "alice-pw")
	sync(b, token)
	sync(a, "alice-pw")
	gotA, conflictsA := withoutConflicts(hashTree(t, a))
	gotB, _ := withoutConflicts(hashTree(t, b))
	sameDigests(t, "a after the edits", gotA, want)
	sameDigests(t, "b after the edits", gotB, want)
	// The conflict: the server's content under the name, a's in a
	// conflict copy beside it, the first content among the file's versions.
	if len(conflictsA) != 1 {
		t.Fatalf("a holds the conflict copies %q; want one, of %s", slices.Sorted(maps.Keys(conflictsA)), conflict)
	}
	for n, h := range conflictsA {
		if filepath.Dir(n) != filepath.Dir(conflict) || h != digest(fromA) {
			t.Fatalf("the conflict copy %s beside %s does not hold a's content", n, conflict)
		}
	}
	var vl apitype.VersionList
	st, body, _ := e.call("GET", "/api/v1/versions?path="+url.QueryEscape("/"+conflict), "alice", "alice-pw", nil, nil)
	if st != http.StatusOK || json.Unmarshal(body, &vl) != nil {
		t.Fatalf("versions of %s: %d %s", conflict, st, body)
	}
	var kept []string
	for _, v := range vl.Versions {
		st, b, _ := e.call("GET", fmt.Sprintf("/api/v1/versions/content?path=%s&version=%d", url.QueryEscape("/"+conflict), v.ID), "alice", "alice-pw", nil, nil)
		if st != http.StatusOK {
			t.Fatalf("version %d of %s: %d", v.ID, conflict, st)
		}
		kept = append(kept, digest(b))
	}
	if !slices.Contains(kept, v1) {
		t.Fatalf("the first content of %s is not among its %d versions", conflict, len(vl.Versions))
	}

	// 3. A folder of 1 GiB made on the server (one 64 MiB upload and 15
	// copies sharing its chunks), synced down to a; renamed, then moved
	// into a folder three deep, on the server: each next sync moves the
	// local copies and transfers almost nothing.
	const part = 64 << 20
	seed++
	video := genContent(seed, part)
	e.mkcol("alice", "alice-pw", davPath("video archive 🎞"))
	e.put("alice", "alice-pw", davPath("video archive 🎞/part 00.mkv"), video)
	for i := 1; i < 16; i++ {
		if st := e.status("COPY", davPath("video archive 🎞/part 00.mkv"), "alice", "alice-pw",
			map[string]string{"Destination": davPath(fmt.Sprintf("video archive 🎞/part %02d.mkv", i))}); st != http.StatusCreated {
			t.Fatalf("COPY: %d", st)
		}
	}
	sync(a, "alice-pw")
	held := inodes(t, filepath.Join(a, "video archive 🎞"))
	if len(held) != 16 {
		t.Fatalf("a holds %d files of the 1 GiB folder, want 16", len(held))
	}
	for i, step := range []struct{ from, to string }{
		{"video archive 🎞", "video archive 🎞 (2024)"},
		{"video archive 🎞 (2024)", scaleFolders[0] + "/" + scaleFolders[4] + "/moved #2 video"},
	} {
		if st := e.status("MOVE", davPath(step.from), "alice", "alice-pw", map[string]string{"Destination": davPath(step.to)}); st != http.StatusCreated {
			t.Fatalf("MOVE %s on the server: %d", step.from, st)
		}
		_, before := e.traffic()
		sync(a, "alice-pw")
		_, after := e.traffic()
		if moved := inodes(t, filepath.Join(a, filepath.FromSlash(step.to))); !maps.Equal(moved, held) {
			t.Fatalf("move %d: a holds %v at %s, before it %v", i+1, moved, step.to, held)
		}
		if _, err := os.Stat(filepath.Join(a, filepath.FromSlash(step.from))); !os.IsNotExist(err) {
			t.Fatalf("move %d: %s still in a (%v)", i+1, step.from, err)
		}
		if after-before >= 1<<20 {
			t.Fatalf("the sync after move %d of a 1 GiB folder moved %d bytes", i+1, after-before)
		}
		t.Logf("%s: the sync after move %d of the 1 GiB folder: %d bytes", tool, i+1, after-before)
	}
	f, err := os.ReadFile(filepath.Join(a, filepath.FromSlash(scaleFolders[0]+"/"+scaleFolders[4]+"/moved #2 video/part 15.mkv")))
	if err != nil || digest(f) != digest(video) {
		t.Fatalf("a's copy of the moved part 15: %v", err)
	}

	// 4. Nothing changed: the root's ETag says so, at 2,000 files too.
	sync(a, "alice-pw")
	r0, _ := e.traffic()
	sync(a, "alice-pw")
	if r1, _ := e.traffic(); r1-r0 > 8 {
		t.Fatalf("a sync with nothing to do made %d requests", r1-r0)
	}
}
