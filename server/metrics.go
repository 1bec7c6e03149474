package server

import (
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"netdisk/errs"
	"netdisk/preview"
)

// Metrics are the daemon's Prometheus collectors.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	bytesIn  *prometheus.CounterVec
	bytesOut *prometheus.CounterVec
	shed     *prometheus.CounterVec // connections closed by the limits (connlimit.go)
	conns    atomic.Pointer[connLimiter]
	// duration is every request's latency by surface and status class
	// (its _count the requests so): bounded labels for dashboards, where
	// requests counts each status and method.
	duration *prometheus.HistogramVec
	logins   *prometheus.CounterVec // failed logins by outcome
	// protocols counts requests by HTTP version: whether clients reach
	// HTTP/2 (which needs TLS here) or stay on HTTP/1.1.
	protocols *prometheus.CounterVec
}

// NewMetrics registers the collectors on reg.
func NewMetrics(reg *prometheus.Registry) *Metrics {
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netdisk_http_requests_total", Help: "HTTP requests by surface, method and status.",
		}, []string{"surface", "method", "code"}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netdisk_http_bytes_in_total", Help: "Request body bytes read.",
		}, []string{"surface"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netdisk_http_bytes_out_total", Help: "Response body bytes written.",
		}, []string{"surface"}),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netdisk_connections_shed_total", Help: "Connections closed by the connection limits: refused (every one busy) or evicted (idle, to make room).",
		}, []string{"reason"}),
	}
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "netdisk_http_request_duration_seconds", Help: "HTTP request latency, from the request's headers to the handler's end, by surface and status class (2xx, 4xx…).",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"surface", "class"})
	m.logins = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "netdisk_login_failures_total", Help: "Failed logins: wrong name or password (password), or refused by the throttle without a check (throttled).",
	}, []string{"reason"})
	m.protocols = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "netdisk_http_requests_by_protocol_total", Help: "HTTP requests by protocol version: 1.0, 1.1 or 2.",
	}, []string{"protocol"})
	for _, r := range []string{"password", "throttled"} {
		m.logins.WithLabelValues(r) // present at 0: an alert on its rate needs the series
	}
	conns := func(busy bool) func() float64 {
		return func() float64 {
			l := m.conns.Load()
			if l == nil {
				return 0
			}
			all, b := l.open()
			if busy {
				return float64(b)
			}
			return float64(all)
		}
	}
	open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "netdisk_connections_open", Help: "Connections the public listener holds.",
	}, conns(false))
	busy := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "netdisk_connections_busy", Help: "Connections the public listener holds that are in a request.",
	}, conns(true))
	reg.MustRegister(m.requests, m.bytesIn, m.bytesOut, m.shed, open, busy, m.duration, m.logins, m.protocols,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *Metrics) connShed(reason string) { m.shed.WithLabelValues(reason).Inc() }

// loginFailed counts a failed login; reason is "password" or "throttled".
func (m *Metrics) loginFailed(reason string) { m.logins.WithLabelValues(reason).Inc() }

// statusClass is the label of a status: "2xx", "4xx"…
func statusClass(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code/100) + "xx"
}

// protocolLabel is r's HTTP version as a label of a fixed set.
func protocolLabel(r *http.Request) string {
	switch {
	case r.ProtoMajor == 2:
		return "2"
	case r.ProtoAtLeast(1, 1):
		return "1.1"
	default:
		return "1.0"
	}
}

// watchConns makes netdisk_connections_open count l's connections.
func (m *Metrics) watchConns(l *connLimiter) { m.conns.Store(l) }

// Registry is where other layers register their collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

func (m *Metrics) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		surface := routeLabel(r.URL.Path)
		start := time.Now()
		cw := &countingWriter{ResponseWriter: w, status: http.StatusOK}
		var cr *countingReader
		if r.Body != nil && r.Body != http.NoBody {
			cr = &countingReader{ReadCloser: r.Body}
			// On a shallow copy: net/http looks at its own request's Body
			// after the handler, and a replaced one makes it wait for an
			// Expect: 100-continue body the client never sends (a 401 to
			// such a PUT hung; litmus http/expect100).
			r = r.WithContext(r.Context())
			r.Body = cr
		}
		// Deferred: a response aborted after its status (errs.AbortResponse
		// panics) is counted too, with its failure's status.
		defer func() {
			code := cw.status
			if cw.failed != 0 {
				code = cw.failed
			}
			m.requests.WithLabelValues(surface, r.Method, strconv.Itoa(code)).Inc()
			m.protocols.WithLabelValues(protocolLabel(r)).Inc()
			m.duration.WithLabelValues(surface, statusClass(code)).Observe(time.Since(start).Seconds())
			m.bytesOut.WithLabelValues(surface).Add(float64(cw.n))
			if cr != nil {
				m.bytesIn.WithLabelValues(surface).Add(float64(cr.n))
			}
		}()
		h.ServeHTTP(cw, r)
	})
}

type countingReader struct {
	io.ReadCloser
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n += int64(n)
	return n, err
}

// countingWriter counts bytes and keeps ReadFrom (sendfile) and Flush working.
type countingWriter struct {
	http.ResponseWriter
	status int
	failed int // the status of a failure after the status was sent
	n      int64
	wrote  bool
}

var _ errs.FailureRecorder = (*countingWriter)(nil)

// RecordFailure counts the response as failed with status, whatever status
// it had sent.
func (c *countingWriter) RecordFailure(status int) { c.failed = status }

func (c *countingWriter) WriteHeader(code int) {
	if !c.wrote {
		c.status, c.wrote = code, true
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.wrote = true
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) ReadFrom(src io.Reader) (int64, error) {
	c.wrote = true
	var n int64
	var err error
	if rf, ok := c.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(struct{ io.Writer }{c.ResponseWriter}, src)
	}
	c.n += n
	return n, err
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// addPreviews exports the thumbnail counters: made, served from the
// node's folder, and refused (not an image, damaged or over the limits).
func (m *Metrics) addPreviews(c *preview.Counters) {
	for _, x := range []struct {
		name, help string
		v          interface{ Load() int64 }
	}{
		{"netdisk_thumbnails_made_total", "Thumbnails made (decoded and kept).", &c.Made},
		{"netdisk_thumbnails_cached_total", "Thumbnails served from the node's thumbnail folder.", &c.Cached},
		{"netdisk_thumbnails_refused_total", "Thumbnail requests refused: not an image, damaged, or over the pixel or size limit.", &c.Refused},
	} {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: x.name, Help: x.help},
			func() float64 { return float64(x.v.Load()) }))
	}
}
