package main

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"netdisk/apitype"
	"netdisk/testutil"
)

// admin fsck checks the history's references, not only the chunk files: a
// version whose chunk lost its record (as a hand repair of meta.db could
// leave it) is a problem, with its exit status.
func TestAdminFsckReportsBrokenHistory(t *testing.T) {
	d := testutil.StartDaemon(t)
	old := testutil.RandomBytes(1, 1000)
	put(t, d, "/f.txt", "admin", d.AdminPass, old)
	put(t, d, "/f.txt", "admin", d.AdminPass, testutil.RandomBytes(2, 2000))
	if r := runCLI(t, d, nil, "admin", "fsck"); r.code != 0 {
		t.Fatalf("fsck of a sound store with a version: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The sqlite3 shell's way in: a connection of its own, foreign keys off.
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(d.DataDir, "meta.db")+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sum := sha256.Sum256(old)
	res, err := db.Exec(`DELETE FROM chunks WHERE sha256 = ?`, hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("deleted %d chunk records of the old content, want 1", n)
	}

	r := runCLI(t, d, nil, "admin", "fsck")
	if r.code != exitFsckProblems {
		t.Fatalf("fsck with a version's chunk record gone: exit %d, want %d\n%s%s", r.code, exitFsckProblems, r.stdout, r.stderr)
	}
	for _, want := range []string{"history", "chunk 0 (id", "has no record", "is 1000 bytes but its chunks hold 0"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("fsck output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "2 broken reference(s) in the trash or the versions") {
		t.Errorf("fsck stderr: %q", r.stderr)
	}
	r = runCLI(t, d, nil, "admin", "fsck", "--json")
	var out apitype.FsckResult
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != exitFsckProblems {
		t.Fatalf("fsck --json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	if len(out.Problems) != 2 || out.Problems[0].Problem != "history" || out.Problems[0].SHA256 != "" {
		t.Fatalf("fsck --json problems: %+v", out.Problems)
	}
}
