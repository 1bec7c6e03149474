package client

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// faultProxy is a real HTTP reverse proxy in front of the real daemon. It
// counts what clients send and, for chunk uploads and one-request uploads,
// can drop the connection, answer 500 or delay, as fault() (uploadFault())
// decides for the n-th chunk (one-request upload) request.
type faultProxy struct {
	URL string

	mu         sync.Mutex
	chunkReqs  int   // uploadChunk requests seen
	chunkOK    int   // uploadChunk requests the daemon answered 200
	chunkBytes int64 // uploadChunk body bytes forwarded to the daemon
	paths      map[string]int
	notOK      []string           // index:status of the others
	okIndex    []string           // index of each uploadChunk the daemon answered 200, in order
	fault      func(n int) string // "", "drop", "500", "delay"
	delay      time.Duration

	uploadReqs  int   // file/upload (one-request upload) requests seen
	uploadBytes int64 // their body bytes forwarded to the daemon
	uploadFault func(n int) string
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{paths: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.paths[r.URL.Path]++
		isChunk := strings.HasSuffix(r.URL.Path, "/file/uploadChunk")
		isSmall := strings.HasSuffix(r.URL.Path, "/file/upload")
		var action string
		switch {
		case isChunk:
			p.chunkReqs++
			if p.fault != nil {
				action = p.fault(p.chunkReqs)
			}
		case isSmall:
			p.uploadReqs++
			if p.uploadFault != nil {
				action = p.uploadFault(p.uploadReqs)
			}
		}
		delay := p.delay
		p.mu.Unlock()
		switch action {
		case "drop":
			io.Copy(io.Discard, r.Body)
			hj, ok := w.(http.Hijacker)
			if !ok {
				panic("no hijacker")
			}
			c, _, _ := hj.Hijack()
			c.Close()
			return
		case "500":
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":"injected fault"}`)
			return
		case "delay":
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		if isSmall {
			r.Body = &countingBody{ReadCloser: r.Body, p: p, n: &p.uploadBytes}
		}
		if isChunk {
			r.Body = &countingBody{ReadCloser: r.Body, p: p, n: &p.chunkBytes}
			rec := &statusRecorder{ResponseWriter: w}
			rp.ServeHTTP(rec, r)
			if rec.status != http.StatusOK {
				p.mu.Lock()
				p.notOK = append(p.notOK, fmt.Sprintf("%s:%d", r.URL.Query().Get("index"), rec.status))
				p.mu.Unlock()
			}
			if rec.status == http.StatusOK {
				p.mu.Lock()
				p.chunkOK++
				p.okIndex = append(p.okIndex, r.URL.Query().Get("index"))
				p.mu.Unlock()
			}
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *faultProxy) stats() (reqs, ok int, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.chunkReqs, p.chunkOK, p.chunkBytes
}

func (p *faultProxy) calls(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paths[path]
}

// setDelay sets how long a "delay" fault holds a request. Like setFault it
// takes the lock: handler goroutines read both.
func (p *faultProxy) setDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// breakAfter is a fault for setFault: the daemon "breaks" (answers 500)
// after n chunk requests.
func breakAfter(n int) func(int) string {
	return func(i int) string {
		if i > n {
			return "500"
		}
		return ""
	}
}

func (p *faultProxy) setFault(f func(n int) string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
}

func (p *faultProxy) setUploadFault(f func(n int) string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.uploadFault = f
}

// uploads reports the one-request uploads seen and their bytes forwarded.
func (p *faultProxy) uploads() (reqs int, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.uploadReqs, p.uploadBytes
}

func (p *faultProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.chunkReqs, p.chunkOK, p.chunkBytes = 0, 0, 0
	p.uploadReqs, p.uploadBytes = 0, 0
	p.paths = map[string]int{}
	p.okIndex = nil
}

// uniqueOK counts the distinct chunk indexes the daemon accepted.
func (p *faultProxy) uniqueOK() (int, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]bool{}
	for _, i := range p.okIndex {
		seen[i] = true
	}
	return len(seen), append([]string(nil), p.okIndex...)
}

type countingBody struct {
	io.ReadCloser
	p *faultProxy
	n *int64 // the counter, guarded by p.mu
}

func (b *countingBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	b.p.mu.Lock()
	*b.n += int64(n)
	b.p.mu.Unlock()
	return n, err
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
