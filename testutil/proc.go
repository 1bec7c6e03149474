package testutil

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is a server process a helper started: what it prints and when it
// has exited. Every server the helpers run (netdisk, PostgreSQL, S3, Redis,
// nginx) starts and stops through it, so a server that dies at start is
// reported with its output in one way, and none is waited for by sleeping.
type proc struct {
	name   string // for messages: "postgres", "netdisk serve", …
	cmd    *exec.Cmd
	exited chan struct{}
	log    *SyncBuffer // what the process printed (also while it runs)
	// halt ends the process when a start is given up and, for most
	// servers, at Stop; nil means SIGKILL. nginx's master wants SIGTERM
	// so that it takes its workers down with it.
	halt func(*proc)
}

// startProc starts cmd with its output collected (and copied to also, when
// not nil) and a goroutine that reaps it.
func startProc(name string, cmd *exec.Cmd, also io.Writer) (*proc, error) {
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{}), log: &SyncBuffer{}}
	var w io.Writer = p.log
	if also != nil {
		w = io.MultiWriter(w, also)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { cmd.Wait(); close(p.exited) }()
	return p, nil
}

// waitReady calls ready every interval until it succeeds. It gives up when
// the process exits (the error carries what it printed), when ctx ends or
// after timeout; in those two cases it ends the process first (end), so a
// failed start leaves nothing running.
func (p *proc) waitReady(ctx context.Context, timeout, interval time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited early: %v\n%s", p.name, err, p.log.String())
		case <-ctx.Done():
			p.end()
			return ctx.Err()
		case <-time.After(interval):
		}
		if time.Now().After(deadline) {
			p.end()
			return fmt.Errorf("%s not ready after %s: %v", p.name, timeout, err)
		}
	}
}

// end ends the process as its halt says.
func (p *proc) end() {
	if p.halt != nil {
		p.halt(p)
		return
	}
	p.kill(syscall.SIGKILL)
}

// kill sends sig and waits for the process to exit.
func (p *proc) kill(sig syscall.Signal) {
	p.cmd.Process.Signal(sig)
	<-p.exited
}

// stop sends SIGTERM and waits up to grace for the process to exit, then
// kills it.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.kill(syscall.SIGKILL)
	}
}

// freePort returns a loopback port nothing listens on at the moment.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// onFreePort calls start with a free loopback address (127.0.0.1:PORT),
// trying up to five ports: between freePort closing its listener and the
// server binding the port, another process may take it.
func onFreePort(start func(addr string) error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		var port int
		if port, err = freePort(); err != nil {
			continue
		}
		if err = start(net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			return nil
		}
	}
	return err
}

// stopper is a server a helper can stop for good.
type stopper interface{ Stop() }

// shared is a server started once per test binary, by the first test that
// wants it, however many tests use it afterwards; Main stops it when the
// tests are done. A failed start is remembered: the other tests fail (or
// skip) at once instead of each waiting for a start that cannot work.
type shared[T stopper] struct {
	launch func() (T, error)
	mu     sync.Mutex
	v      T
	err    error
	up     bool
}

func (s *shared[T]) get() (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.up && s.err == nil {
		s.v, s.err = s.launch()
		s.up = s.err == nil
	}
	return s.v, s.err
}

func (s *shared[T]) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.up {
		s.v.Stop()
		var zero T
		s.v, s.up = zero, false
	}
}

// Main runs a package's tests, then stops the servers they shared
// (SharedPostgres, SharedS3) and exits: a package whose tests share a
// server has `func TestMain(m *testing.M) { testutil.Main(m) }`.
func Main(m *testing.M) {
	code := m.Run()
	sharedPG.stop()
	sharedS3.stop()
	os.Exit(code)
}
