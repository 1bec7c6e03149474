package mount_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const lockInfo = `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>`

// davLock takes a WebDAV lock as alice and returns its token.
func (e *env) davLock(path, depth string) string {
	e.t.Helper()
	resp, err := e.d.Do(context.Background(), "LOCK", "/dav"+path, "alice", "alice-pass", []byte(lockInfo), map[string]string{"Depth": depth})
	if err != nil {
		e.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	tok := resp.Header.Get("Lock-Token")
	if resp.StatusCode/100 != 2 || tok == "" {
		e.t.Fatalf("LOCK %s: %d", path, resp.StatusCode)
	}
	return tok
}

func (e *env) davUnlock(path, tok string) {
	e.t.Helper()
	resp, err := e.d.Do(context.Background(), "UNLOCK", "/dav"+path, "alice", "alice-pass", nil, map[string]string{"Lock-Token": tok})
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		e.t.Fatalf("UNLOCK %s: %d", path, resp.StatusCode)
	}
}

// serverContent reads p from the server, not through the mount.
func (e *env) serverContent(p string) string {
	e.t.Helper()
	resp, err := e.d.Do(context.Background(), "GET", "/dav"+p, "alice", "alice-pass", nil, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return resp.Status
	}
	return string(b)
}

// TestLockedFileThroughMount: a WebDAV lock taken elsewhere makes writing,
// truncating, chmod, removing and renaming the file through the mount fail
// with EACCES (README, "Locks"), and the file on the server is unchanged;
// after UNLOCK all of them work. A depth-infinity lock on a folder refuses
// creating files and directories in it.
func TestLockedFileThroughMount(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	for p, s := range map[string]string{"/f": "original", "/other": "other"} {
		if _, err := e.c.Upload(ctx, p, strings.NewReader(s), int64(len(s))); err != nil {
			t.Fatal(err)
		}
	}
	f, other := filepath.Join(e.mnt, "f"), filepath.Join(e.mnt, "other")
	tok := e.davLock("/f", "0")

	wantEACCES := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, syscall.EACCES) {
			t.Errorf("%s on a locked file: %v, want EACCES", what, err)
		}
	}
	wantEACCES("write", os.WriteFile(f, []byte("changed"), 0o644))
	wantEACCES("remove", os.Remove(f))
	wantEACCES("rename away", os.Rename(f, filepath.Join(e.mnt, "g")))
	wantEACCES("rename onto", os.Rename(other, f))
	wantEACCES("chmod", os.Chmod(f, 0o600))
	// Tools report it plainly and do not retry.
	out, err := exec.Command("rm", "-f", f).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Permission denied") {
		t.Errorf("rm on a locked file: %v %s", err, out)
	}
	if got := e.serverContent("/f"); got != "original" {
		t.Fatalf("locked file changed on the server: %q", got)
	}
	if got := e.serverContent("/other"); got != "other" {
		t.Fatalf("rename source changed: %q", got)
	}

	e.davUnlock("/f", tok)
	// The refused version was discarded, not kept to land after UNLOCK.
	if r, err := os.Open(f); err == nil {
		r.Close()
	}
	if got := e.serverContent("/f"); got != "original" {
		t.Fatalf("the refused write landed after UNLOCK: %q", got)
	}
	if err := os.WriteFile(f, []byte("after unlock"), 0o644); err != nil {
		t.Fatalf("write after UNLOCK: %v", err)
	}
	if got := e.serverContent("/f"); got != "after unlock" {
		t.Fatalf("after UNLOCK the server has %q", got)
	}
	if err := os.Chmod(f, 0o600); err != nil {
		t.Errorf("chmod after UNLOCK: %v", err)
	}
	if err := os.Rename(f, filepath.Join(e.mnt, "g")); err != nil {
		t.Errorf("rename after UNLOCK: %v", err)
	}
	if err := os.Remove(filepath.Join(e.mnt, "g")); err != nil {
		t.Errorf("remove after UNLOCK: %v", err)
	}

	// A depth-infinity lock on a folder.
	dir := filepath.Join(e.mnt, "dir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dtok := e.davLock("/dir", "infinity")
	wantEACCES("create in a locked folder", os.WriteFile(filepath.Join(dir, "new"), []byte("x"), 0o644))
	wantEACCES("mkdir in a locked folder", os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	wantEACCES("rename into a locked folder", os.Rename(other, filepath.Join(dir, "other")))
	if es, _, err := e.be.ListPage(ctx, "/dir", "", 10); err != nil || len(es) != 0 {
		t.Fatalf("locked folder changed on the server: %v %v", es, err)
	}
	e.davUnlock("/dir", dtok)
	if err := os.WriteFile(filepath.Join(dir, "new"), []byte("x"), 0o644); err != nil {
		t.Errorf("create after UNLOCK: %v", err)
	}
}
