package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"netdisk/testutil"
)

// Coordinated pulls: many `netdisk pull --shared-cache` of one
// file on one host transfer it from the server once.

const sharedSize = 256 << 20

// bytesOut reads the daemon's count of bytes served over one surface
// (api, dav, …); none served yet is 0.
func (e *env) bytesOut(surface string) int64 {
	e.t.Helper()
	st, body, _ := e.call("GET", "/metrics", "admin", e.d.AdminPass, nil, nil)
	if st != 200 {
		e.t.Fatalf("/metrics: %d", st)
	}
	m := regexp.MustCompile(`(?m)^netdisk_http_bytes_out_total\{surface="` + regexp.QuoteMeta(surface) + `"\} (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	f, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		e.t.Fatal(err)
	}
	return int64(f)
}

// puller is one `netdisk pull --shared-cache --json` process.
type puller struct {
	node  string
	out   string
	cmd   *exec.Cmd
	lines chan map[string]any // JSON lines of its stdout
	done  chan error
	mu    sync.Mutex
	log   []map[string]any
}

func (e *env) startPull(addr, cache, out, node string) *puller {
	e.t.Helper()
	p := &puller{node: node, out: out, lines: make(chan map[string]any, 1<<16), done: make(chan error, 1)}
	p.cmd = exec.Command(testutil.Binary(e.t), "pull", "/big.bin", out, "--shared-cache", cache, "--node", node,
		"--json", "--server", "http://"+addr, "--user", "admin", "--password", e.d.AdminPass)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	var stderr bytes.Buffer
	p.cmd.Stderr = &stderr
	if err := p.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { p.cmd.Process.Kill() })
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				p.mu.Lock()
				if m["type"] != "progress" {
					p.log = append(p.log, m)
				}
				p.mu.Unlock()
				select {
				case p.lines <- m:
				default:
				}
			}
		}
		err := p.cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%s: %w: %s", node, err, stderr.String())
		}
		p.done <- err
		close(p.lines)
	}()
	return p
}

// until waits for a JSON line matching cond (or fails when the process ends).
func (p *puller) until(t *testing.T, what string, cond func(map[string]any) bool) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case m, ok := <-p.lines:
			if !ok {
				t.Fatalf("%s ended before %s", p.node, what)
			}
			if cond(m) {
				return
			}
		case <-timeout:
			t.Fatalf("%s: no %s within 2 minutes", p.node, what)
		}
	}
}

// summary is the puller's "shared" line: what it did.
func (p *puller) summary() map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.log {
		if m["type"] == "shared" {
			return m
		}
	}
	return nil
}

func fileSum(t *testing.T, p string) [32]byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}

func (e *env) bigFile() [32]byte {
	e.t.Helper()
	body := testutil.RandBytes(sharedSize)
	e.put("admin", e.d.AdminPass, "/dav/big.bin", body)
	return sha256.Sum256(body)
}

// TestSharedPullTransfersOnce: 20 concurrent pulls of one 256 MiB file into
// one shared cache get it from the server once, and all 20 copies are the
// file.
func TestSharedPullTransfersOnce(t *testing.T) {
	e := start(t)
	want := e.bigFile()
	before := e.bytesOut("dav")
	dir, cache := t.TempDir(), t.TempDir()
	var ps []*puller
	for i := range 20 {
		ps = append(ps, e.startPull(e.d.Addr, cache, filepath.Join(dir, fmt.Sprintf("out-%02d", i)), fmt.Sprintf("node-%02d", i)))
	}
	fetched := 0
	for _, p := range ps {
		if err := <-p.done; err != nil {
			t.Fatal(err)
		}
		s := p.summary()
		if s == nil {
			t.Fatalf("%s printed no summary", p.node)
		}
		if s["fetched"] == true {
			fetched++
		} else if s["fromCache"] != true {
			t.Fatalf("%s neither fetched nor used the cache: %v", p.node, s)
		}
		if fileSum(t, p.out) != want {
			t.Fatalf("%s: output differs from the file", p.node)
		}
	}
	if fetched != 1 {
		t.Fatalf("%d nodes fetched the file, want 1", fetched)
	}
	served := e.bytesOut("dav") - before
	if served < sharedSize || served >= 2*sharedSize {
		t.Fatalf("the server sent %d bytes over /dav/ for 20 pulls of %d: want it once", served, sharedSize)
	}
	t.Logf("20 pulls, %d bytes served (file %d)", served, sharedSize)
}

// TestSharedPullHolderKilled: the puller holding the lock is killed with
// SIGKILL mid-transfer; its lease runs out and the first waiter in FIFO
// order gets the lock, resumes the partial download and completes it; the
// others use the cache.
func TestSharedPullHolderKilled(t *testing.T) {
	e := start(t, "--lock-lease", "1s")
	want := e.bigFile()
	before := e.bytesOut("dav")
	dir, cache := t.TempDir(), t.TempDir()
	slow := slowProxy(t, e.d.Addr, 32<<20) // the victim's transfer takes seconds
	victim := e.startPull(slow, cache, filepath.Join(dir, "out-victim"), "victim")
	victim.until(t, "progress past 32 MiB", func(m map[string]any) bool {
		d, _ := m["done"].(float64)
		return m["type"] == "progress" && d >= 32<<20
	})
	// Waiters join one by one, each queued before the next starts: their
	// FIFO order is w1, w2, w3.
	var ws []*puller
	for i := 1; i <= 3; i++ {
		w := e.startPull(e.d.Addr, cache, filepath.Join(dir, fmt.Sprintf("out-w%d", i)), fmt.Sprintf("w%d", i))
		w.until(t, "queued", func(m map[string]any) bool {
			pos, _ := m["position"].(float64)
			return m["type"] == "lock" && m["status"] == "queued" && int(pos) == i
		})
		ws = append(ws, w)
	}
	if err := victim.cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	if err := <-victim.done; err == nil {
		t.Fatal("the killed puller exited cleanly")
	}
	for i, w := range ws {
		if err := <-w.done; err != nil {
			t.Fatal(err)
		}
		s := w.summary()
		if i == 0 && s["fetched"] != true {
			t.Fatalf("w1, the head of the queue, did not complete the pull: %v", s)
		}
		if i > 0 && s["fromCache"] != true {
			t.Fatalf("%s did not use the cache: %v", w.node, s)
		}
		if fileSum(t, w.out) != want {
			t.Fatalf("%s: output differs from the file", w.node)
		}
	}
	// w1 resumed from the victim's part: less than twice the file went out.
	served := e.bytesOut("dav") - before
	if served < sharedSize || served >= 2*sharedSize {
		t.Fatalf("served %d bytes for a file of %d", served, sharedSize)
	}
	t.Logf("served %d bytes (file %d): the killed holder's part was resumed", served, sharedSize)
}

// slowProxy forwards TCP to addr, sending at most rate bytes per second
// towards the client: a slow link for one puller.
func slowProxy(t *testing.T, addr string, rate int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer s.Close()
				go io.Copy(s, c)
				buf := make([]byte, 64<<10)
				tick := time.Duration(len(buf)) * time.Second / time.Duration(rate)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
						time.Sleep(tick * time.Duration(n) / time.Duration(len(buf)))
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}
