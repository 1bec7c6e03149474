package e2e

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"netdisk/testutil"
)

// TestSharedCacheMounts: two real FUSE mounts sharing one --cache-dir with
// --shared-cache read the same file at the same time: every chunk is
// fetched from the server once (the other mount waits on the chunk's pull
// lock and reads it from the shared cache), and both read the file.
func TestSharedCacheMounts(t *testing.T) {
	testutil.RequireTool(t, "fusermount3")
	const size = 64 << 20 // 16 chunks of 4 MiB
	e := start(t)
	body := testutil.RandBytes(size)
	e.put("admin", e.d.AdminPass, "/dav/big.bin", body)
	want := sha256.Sum256(body)
	cache := t.TempDir()
	var mnts []string
	for i := range 2 {
		mnts = append(mnts, e.startMount(cache, fmt.Sprintf("m%d", i), "--shared-cache", "--prefetch", "-1"))
	}
	before := e.bytesOut("dav")
	var wg sync.WaitGroup
	sums := make([][32]byte, len(mnts))
	errs := make([]error, len(mnts))
	for i, m := range mnts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := os.Open(filepath.Join(m, "big.bin"))
			if err != nil {
				errs[i] = err
				return
			}
			defer f.Close()
			h := sha256.New()
			_, errs[i] = io.CopyBuffer(h, f, make([]byte, 128<<10))
			copy(sums[i][:], h.Sum(nil))
		}()
	}
	wg.Wait()
	for i := range mnts {
		if errs[i] != nil {
			t.Fatalf("mount %d: %v", i, errs[i])
		}
		if sums[i] != want {
			t.Fatalf("mount %d read other bytes", i)
		}
	}
	served := e.bytesOut("dav") - before
	if served < size || served >= size+size/4 {
		t.Fatalf("two mounts reading %d bytes at once: the server sent %d; want each chunk once", size, served)
	}
	t.Logf("two mounts, %d bytes served for a file of %d", served, size)
}

// startMount runs `netdisk mount` in the foreground on a new mount point
// and waits until the drive shows through it; unmounted at cleanup.
func (e *env) startMount(cache, node string, flags ...string) string {
	e.t.Helper()
	mnt := e.t.TempDir()
	args := append([]string{"mount", "--server", e.d.URL, "--user", "admin", "--cache-dir", cache,
		"--node", node}, flags...)
	cmd := exec.Command(testutil.Binary(e.t), append(args, mnt)...)
	cmd.Env = append(os.Environ(), "NETDISK_PASSWORD="+e.d.AdminPass)
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	e.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		exec.Command("fusermount3", "-u", "-z", mnt).Run()
	})
	waitFor(e.t, 30*time.Second, "mount "+node, func() bool {
		select {
		case <-exited:
			e.t.Fatalf("netdisk mount exited: %s", out.String())
		default:
		}
		b, err := os.ReadFile("/proc/self/mounts")
		if err != nil || !strings.Contains(string(b), " "+mnt+" ") {
			return false
		}
		_, err = os.Stat(filepath.Join(mnt, "big.bin"))
		return err == nil
	})
	return mnt
}
