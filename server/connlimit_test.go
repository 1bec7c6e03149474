package server

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"netdisk/testutil"
)

// dialFrom opens a TCP connection to addr from the loopback address src
// (127.0.0.0/8 all reach lo on Linux): each is another client address.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", src, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends one request on c and reads its answer; the connection
// stays open (keep-alive).
func roundTrip(c net.Conn, br *bufio.Reader, req string) (int, error) {
	if _, err := io.WriteString(c, req); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// closedByServer waits (at most within) for the server to close c.
func closedByServer(c net.Conn, within time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(within))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

const healthz = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"

// TestConnLimitsKeepHealthzAnswering: anonymous clients from many
// addresses hold more connections than the daemon has descriptors for,
// some idle after a request, some silent; /healthz still answers at once,
// and the daemon holds no more than its bound.
func TestConnLimitsKeepHealthzAnswering(t *testing.T) {
	d := testutil.StartDaemon(t, "--max-conns", "64", "--max-conns-per-addr", "16", "--preauth-timeout", "1h")
	// A descriptor limit the attack exceeds by far: on the old daemon the
	// listener then fails to accept anything, /healthz included.
	lim := unix.Rlimit{Cur: 200, Max: 200}
	if err := unix.Prlimit(d.Pid(), unix.RLIMIT_NOFILE, &lim, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	const addrs, per = 20, 20 // 400 connections
	for a := range addrs {
		src := fmt.Sprintf("127.0.0.%d", 10+a)
		for i := range per {
			c := dialFrom(t, src, d.Addr)
			if i%2 == 0 {
				continue // silent: sends nothing
			}
			// Idle after one request (keep-alive); its answer is left
			// unread, and whether this connection is still held or was
			// evicted for a later one does not matter.
			io.WriteString(c, healthz)
		}
	}
	c := dialFrom(t, "127.0.0.1", d.Addr)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if st, err := roundTrip(c, bufio.NewReader(c), healthz); err != nil || st != 200 {
		t.Fatalf("/healthz during the flood: %d %v", st, err)
	}
	c.SetDeadline(time.Time{})
	m := metrics(t, d)
	if open := m["netdisk_connections_open"]; open > 64 || open < 1 {
		t.Errorf("connections held: %v, want at most 64", open)
	}
	if m[`netdisk_connections_shed_total{reason="evicted"}`] < 300 {
		t.Errorf("evicted: %v, want the idle connections over the bounds (over 300)", m[`netdisk_connections_shed_total{reason="evicted"}`])
	}
	if n := openFDs(t, d.Pid()); n >= 200 {
		t.Errorf("the daemon holds %d descriptors, at its limit", n)
	}
}

// TestConnLimitsPerAddress: over its address's bound, a new connection
// closes that address's longest idle one; when every one of them is busy
// with a request, the new one is closed instead. Other addresses are not
// affected.
func TestConnLimitsPerAddress(t *testing.T) {
	d := testutil.StartDaemon(t, "--max-conns-per-addr", "4", "--preauth-timeout", "1h")
	// Idle: the fifth closes the first.
	var idle []net.Conn
	for i := range 5 {
		if i > 0 {
			// A client reads its answer before the server's connection
			// turns idle: wait until the server counts the previous ones
			// as idle (only the metrics request itself busy) before the
			// next, so they turn idle in order — the first is the longest
			// idle — and the fifth finds an idle connection to close.
			waitFor(t, "idle connections", func() bool { return metrics(t, d)["netdisk_connections_busy"] <= 1 })
		}
		c := dialFrom(t, "127.0.0.2", d.Addr)
		if st, err := roundTrip(c, bufio.NewReader(c), healthz); err != nil || st != 200 {
			t.Fatalf("healthz: %d %v", st, err)
		}
		idle = append(idle, c)
	}
	if !closedByServer(idle[0], 10*time.Second) {
		t.Errorf("the address's longest idle connection stayed open past the bound")
	}
	// Busy: four uploads in progress from one address; a fifth is closed.
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+d.AdminPass))
	for i := range 4 {
		c := dialFrom(t, "127.0.0.3", d.Addr)
		fmt.Fprintf(c, "PUT /dav/busy%d HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Length: 1000\r\n\r\npartial", i, auth)
	}
	waitFor(t, "four uploads in progress", func() bool { return metrics(t, d)["netdisk_connections_busy"] >= 5 }) // and the metrics request
	extra := dialFrom(t, "127.0.0.3", d.Addr)
	if !closedByServer(extra, 10*time.Second) {
		t.Errorf("a connection over the bound of an address whose connections are all busy was kept")
	}
	// Another address is served.
	c := dialFrom(t, "127.0.0.4", d.Addr)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if st, err := roundTrip(c, bufio.NewReader(c), healthz); err != nil || st != 200 {
		t.Fatalf("/healthz from another address: %d %v", st, err)
	}
}

// TestPreAuthTimeout: a connection that has not authenticated is closed
// after --preauth-timeout, whether it sent nothing or is idle after an
// anonymous request; one whose request authenticated keeps the ordinary
// idle timeout.
func TestPreAuthTimeout(t *testing.T) {
	d := testutil.StartDaemon(t, "--preauth-timeout", "500ms")
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+d.AdminPass))
	authed := dialFrom(t, "127.0.0.1", d.Addr)
	abr := bufio.NewReader(authed)
	if st, err := roundTrip(authed, abr, "GET /api/v1/quota HTTP/1.1\r\nHost: x\r\nAuthorization: "+auth+"\r\n\r\n"); err != nil || st != 200 {
		t.Fatalf("authenticated request: %d %v", st, err)
	}
	silent := dialFrom(t, "127.0.0.1", d.Addr)
	anon := dialFrom(t, "127.0.0.1", d.Addr)
	if st, err := roundTrip(anon, bufio.NewReader(anon), healthz); err != nil || st != 200 {
		t.Fatalf("anonymous request: %d %v", st, err)
	}
	for name, c := range map[string]net.Conn{"silent": silent, "idle anonymous": anon} {
		if !closedByServer(c, 20*time.Second) {
			t.Errorf("%s connection still open 20 s after a 500ms pre-authentication timeout", name)
		}
	}
	// The authenticated connection went idle before the anonymous one
	// and outlived it.
	authed.SetDeadline(time.Now().Add(20 * time.Second))
	if st, err := roundTrip(authed, abr, "GET /api/v1/quota HTTP/1.1\r\nHost: x\r\nAuthorization: "+auth+"\r\n\r\n"); err != nil || st != 200 {
		t.Errorf("authenticated connection after the others' timeout: %d %v", st, err)
	}
}

func TestDefaultConnLimits(t *testing.T) {
	for _, c := range []struct {
		fds           uint64
		max, perAddr  int
		given, wanted ConnLimits
	}{
		{fds: 1 << 20, max: DefaultMaxConns, perAddr: DefaultPerAddr},
		{fds: 1024, max: 512, perAddr: 512},
		{fds: 256, max: 128, perAddr: 128},
		{fds: 0, max: DefaultMaxConns, perAddr: DefaultPerAddr},
	} {
		got := DefaultConnLimits(ConnLimits{}, c.fds)
		if got.Max != c.max || got.PerAddr != c.perAddr || got.PreAuthTimeout != DefaultPreAuthTimeout {
			t.Errorf("fd limit %d: %+v, want max %d per address %d", c.fds, got, c.max, c.perAddr)
		}
	}
	if got := DefaultConnLimits(ConnLimits{Max: 10, PerAddr: 3, PreAuthTimeout: time.Second}, 1<<20); got != (ConnLimits{10, 3, time.Second}) {
		t.Errorf("given limits changed: %+v", got)
	}
}

var metricLine = regexp.MustCompile(`^(netdisk_[a-z_]+(?:\{[^}]*\})?) ([0-9.e+]+)$`)

// metrics reads the daemon's netdisk_* metrics.
func metrics(t *testing.T, d *testutil.Daemon) map[string]float64 {
	t.Helper()
	resp, err := d.Do(context.Background(), "GET", "/metrics", "admin", d.AdminPass, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := map[string]float64{}
	for _, l := range strings.Split(string(b), "\n") {
		if g := metricLine.FindStringSubmatch(l); g != nil {
			v, _ := strconv.ParseFloat(g[2], 64)
			m[g[1]] = v
		}
	}
	return m
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func openFDs(t *testing.T, pid int) int {
	t.Helper()
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// TestConnLimiterBookkeeping runs the limiter in process (under -race in
// CI) with clients from four addresses racing past tight bounds: however
// connections end (evicted, refused, closed by the client), the counts
// return to zero, and they never exceed the bounds.
func TestConnLimiterBookkeeping(t *testing.T) {
	l := newConnLimiter(ConnLimits{Max: 8, PerAddr: 4, PreAuthTimeout: time.Minute}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/auth" {
			markAuthenticated(r)
		}
		io.WriteString(w, "ok")
	}), ConnState: l.connState, ConnContext: connContext}
	go hs.Serve(l.listener(ln))
	t.Cleanup(func() { hs.Close() })
	var wg sync.WaitGroup
	var over atomic.Int32
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := fmt.Sprintf("127.0.0.%d", 2+g%4)
			var keep []net.Conn
			defer func() {
				for _, c := range keep {
					c.Close()
				}
			}()
			for i := range 20 {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
				c, err := d.Dial("tcp", ln.Addr().String())
				if err != nil {
					continue
				}
				c.SetDeadline(time.Now().Add(10 * time.Second))
				path := "/anon"
				if i%3 == 0 {
					path = "/auth"
				}
				roundTrip(c, bufio.NewReader(c), "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
				if all, _ := l.open(); all > 8 {
					over.Add(1)
				}
				if i%2 == 0 {
					c.Close()
				} else {
					keep = append(keep, c)
				}
			}
		}()
	}
	wg.Wait()
	if n := over.Load(); n > 0 {
		t.Errorf("the limiter held more than 8 connections %d times", n)
	}
	waitFor(t, "every connection forgotten", func() bool {
		all, _ := l.open()
		l.mu.Lock()
		defer l.mu.Unlock()
		return all == 0 && len(l.byAddr) == 0
	})
}
