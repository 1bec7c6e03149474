// Package tlsbulk serves HTTPS connections whose sending half, once the
// TLS 1.3 handshake is done, seals its records here rather than in
// crypto/tls, so that a large answer costs one read of the file, the
// encryption and one write per 256 KiB: crypto/tls copies every record's
// payload before sealing it and makes one write(2) per 16 KiB record. On
// this project's benchmark (bench/tls) that took a 1 GiB HTTPS/1.1
// download from 1.24–1.41 to 1.01–1.10 CPU-seconds of the daemon, and
// from 0.94–1.08 to 0.69–0.77 of the client (fewer, larger reads). It is
// what kernel TLS would give, on kernels without a TLS module (the
// machines this project runs on have none).
//
// crypto/tls does everything else: the handshake, certificates, ALPN, the
// receiving half (requests and uploads) and every connection it does not
// hand over (TLS 1.2, HTTP/2, whose framing costs more than its records, a
// failed handshake, ACME's TLS-ALPN-01). The handover needs the server's
// application traffic secret, which crypto/tls gives only through
// Config.KeyLogWriter: each connection gets its own writer that keeps the
// secret in memory (secretCatcher) and writes nothing. A client that will
// speak HTTP/1.1 over TLS 1.3 gets no session ticket, so the first
// application record is sequence number zero (a ticket would be sealed
// under the same key first); TLS 1.3 resumption saves only the signature,
// the key exchange is made anyway.
//
// Safety: a record sealed twice under one key and sequence number would
// break AES-GCM, so once the sending half is handed over crypto/tls cannot
// write (guardConn). The one record it must send then, the KeyUpdate that
// answers a peer's KeyUpdate asking for one, is dropped and sent from here
// instead, under this side's keys (RFC 8446 §4.6.3); anything else it
// writes (an alert on a broken record) fails, and the connection ends.
package tlsbulk

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

const (
	headerLen = 5
	// maxPlain is the largest plaintext of a record (RFC 8446 §5.1).
	maxPlain = 16384
	// tagLen is the AEAD tag of every suite handled.
	tagLen = 16
	// maxOverhead is a record's bytes beyond its plaintext: the header,
	// the content type and the tag.
	maxOverhead = headerLen + 1 + tagLen
	// batchRecords is how many records one write(2) carries (256 KiB),
	// the size of the daemon's other copy buffers.
	batchRecords = 16
	batchPlain   = batchRecords * maxPlain

	recordTypeAlert           = 21
	recordTypeHandshake       = 22
	recordTypeApplicationData = 23
	handshakeTypeKeyUpdate    = 24

	// keyUpdateRecordLen is the length of the record of a KeyUpdate
	// message (4 bytes of header, 1 of request_update) sealed.
	keyUpdateRecordLen = headerLen + 5 + 1 + tagLen
)

// keyUpdateAfter is how many records are sealed under one key before the
// sending half moves to the next (a KeyUpdate): AES-GCM's limit is 2^24.5
// full records per key (RFC 8446 §5.5). A variable so a test can reach it.
var keyUpdateAfter uint64 = 1 << 24

// keyUpdateRoom is the room a buffer keeps for KeyUpdate records before
// its records (one per record at most, which only a test's keyUpdateAfter
// makes).
const keyUpdateRoom = batchRecords * keyUpdateRecordLen

var (
	// errHandedOver is what crypto/tls gets if it tries to write on a
	// connection whose sending half is no longer its own.
	errHandedOver = errors.New("tlsbulk: the sending half of this TLS connection is sealed elsewhere")
	// errShutdown is a write after close_notify, as crypto/tls's.
	errShutdown = errors.New("tls: protocol is shutdown")
)

// Conn is an HTTPS connection after its handshake. Reads go through
// crypto/tls; writes go through crypto/tls too unless the connection
// speaks TLS 1.3 with a suite handled here (sealer), in which case they are
// sealed here in batches. It offers what net/http looks for on a
// connection: ConnectionState (Request.TLS), ReadFrom (a file read
// straight into the records), CloseWrite and NetConn.
type Conn struct {
	tc  *tls.Conn
	raw net.Conn // what the TLS connection runs over
	g   *guardConn

	mu           sync.Mutex // the sending half
	s            *sealer    // nil: crypto/tls sends
	err          error      // the first failed write; the stream is broken after it
	closeNotifed bool
}

// newConn makes c's sending half its own if the handshake came out as
// TLS 1.3 with a suite handled here and the secret may be used (take);
// otherwise c sends through crypto/tls.
func newConn(tc *tls.Conn, raw net.Conn, g *guardConn, secret []byte) *Conn {
	c := &Conn{tc: tc, raw: raw, g: g}
	st := tc.ConnectionState()
	if st.Version != tls.VersionTLS13 || secret == nil {
		return c
	}
	s, err := newSealer(st.CipherSuite, secret)
	if err != nil {
		return c
	}
	g.handedOver.Store(true)
	c.s = s
	return c
}

// Sealed reports whether c, a connection a Listener handed out, has its
// records sealed here.
func Sealed(c net.Conn) bool {
	bc, ok := c.(*Conn)
	return ok && bc.s != nil
}

func (c *Conn) Read(p []byte) (int, error) { return c.tc.Read(p) }

// Write sends p in records of up to 16 KiB, up to 16 of them per write(2).
func (c *Conn) Write(p []byte) (int, error) {
	if c.s == nil {
		return c.tc.Write(p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.writable(); err != nil {
		return 0, err
	}
	// A write of one record takes a buffer of one record's size: many
	// connections stalled on small writes hold no more than crypto/tls's
	// own buffers would.
	buf := getOut(len(p) <= maxPlain)
	defer putOut(buf)
	done := 0
	for done < len(p) {
		o, n := 0, done
		for n < len(p) && o+keyUpdateRecordLen+maxPlain+maxOverhead <= len(*buf) {
			o += c.keyUpdate((*buf)[o:])
			m := min(maxPlain, len(p)-n)
			o += c.s.seal((*buf)[o:], p[n:n+m], recordTypeApplicationData)
			n += m
		}
		if err := c.send((*buf)[:o]); err != nil {
			return done, err
		}
		done = n
	}
	return done, nil
}

// ReadFrom sends what r gives until its end, reading up to 256 KiB at a
// time straight into the buffer the records are sealed from: net/http
// calls it with a file for the body of an HTTP/1.1 answer. (Reading and
// sealing the next batch in another goroutine while one is written was
// measured: no faster on two cores, and more CPU.)
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	if c.s == nil {
		bp := getIn()
		defer putIn(bp)
		return io.CopyBuffer(writerOnly{c.tc}, r, (*bp)[:batchPlain])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.writable(); err != nil {
		return 0, err
	}
	in, out := getIn(), getOut(false)
	defer putIn(in)
	defer putOut(out)
	var total int64
	for {
		// in has one byte more than is read into it: sealFrom puts
		// the last record's content type there.
		n, rerr := r.Read((*in)[:batchPlain])
		if n > 0 {
			o := 0
			for off := 0; off < n; {
				o += c.keyUpdate((*out)[o:])
				m := min(maxPlain, n-off)
				o += c.s.sealFrom((*out)[o:], (*in)[off:], m)
				off += m
			}
			if err := c.send((*out)[:o]); err != nil {
				return total, err
			}
			total += int64(n)
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

// writable is nil if records may still be sent (c.mu held).
func (c *Conn) writable() error {
	if c.err != nil {
		return c.err
	}
	if c.closeNotifed {
		return errShutdown
	}
	return nil
}

// keyUpdate seals a KeyUpdate into dst and moves to the next key when the
// current one has sealed keyUpdateAfter records or the peer asked for one;
// it returns the bytes written to dst (none most of the time).
func (c *Conn) keyUpdate(dst []byte) int {
	if c.s.seq < keyUpdateAfter && !c.g.keyUpdateAsked.Swap(false) {
		return 0
	}
	// key_update, 1 byte long, update_not_requested: the peer's own
	// keys are its business.
	n := c.s.seal(dst, []byte{handshakeTypeKeyUpdate, 0, 0, 1, 0}, recordTypeHandshake)
	if err := c.s.update(); err != nil {
		// HKDF over a hash of the right size does not fail; if it
		// did, sealing on under the old key would be the harm.
		panic(err)
	}
	return n
}

func (c *Conn) send(b []byte) error {
	if _, err := c.raw.Write(b); err != nil {
		c.err = err
		return err
	}
	return nil
}

// closeNotify sends the close_notify alert once (c.mu held); nothing is
// sent after it.
func (c *Conn) closeNotify() error {
	if c.closeNotifed || c.err != nil {
		return c.err
	}
	c.closeNotifed = true
	var rec [keyUpdateRecordLen + headerLen + 2 + maxOverhead]byte
	n := c.keyUpdate(rec[:])                              // owed before any record, the alert too
	n += c.s.seal(rec[n:], []byte{1, 0}, recordTypeAlert) // warning, close_notify
	// As crypto/tls: a peer that reads nothing does not hold Close up.
	c.raw.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.send(rec[:n])
}

// CloseWrite sends close_notify, as crypto/tls's CloseWrite does.
func (c *Conn) CloseWrite() error {
	if c.s == nil {
		return c.tc.CloseWrite()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeNotify()
}

// Close sends close_notify unless a write is under way (then Close is what
// breaks that write off, as with crypto/tls) and closes the connection.
func (c *Conn) Close() error {
	if c.s == nil {
		return c.tc.Close()
	}
	if c.mu.TryLock() {
		c.closeNotify()
		c.mu.Unlock()
	}
	return c.raw.Close()
}

// ConnectionState is crypto/tls's: net/http sets Request.TLS from it.
func (c *Conn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }

// NetConn is the connection TLS runs over.
func (c *Conn) NetConn() net.Conn                  { return c.raw }
func (c *Conn) LocalAddr() net.Addr                { return c.raw.LocalAddr() }
func (c *Conn) RemoteAddr() net.Addr               { return c.raw.RemoteAddr() }
func (c *Conn) SetDeadline(t time.Time) error      { return c.raw.SetDeadline(t) }
func (c *Conn) SetReadDeadline(t time.Time) error  { return c.raw.SetReadDeadline(t) }
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }

// guardConn is what crypto/tls runs over: the connection, except that its
// writes stop once the sending half is handed over.
type guardConn struct {
	net.Conn
	handedOver atomic.Bool
	// keyUpdateAsked: the peer asked for a KeyUpdate, which the sending
	// half owes before its next record.
	keyUpdateAsked atomic.Bool
}

// Write passes crypto/tls's records on until the handover. After it, the
// KeyUpdate crypto/tls answers a peer's request with (the only record of
// its length it sends, an alert being shorter) is dropped, reported
// written so that crypto/tls moves on to the peer's next key, and owed by
// the sending half; any other write fails.
func (g *guardConn) Write(p []byte) (int, error) {
	if !g.handedOver.Load() {
		return g.Conn.Write(p)
	}
	if len(p) == keyUpdateRecordLen && p[0] == recordTypeApplicationData &&
		int(p[3])<<8|int(p[4]) == keyUpdateRecordLen-headerLen {
		g.keyUpdateAsked.Store(true)
		return len(p), nil
	}
	return 0, errHandedOver
}

func (g *guardConn) NetConn() net.Conn { return g.Conn }

// writerOnly hides a writer's other methods from io.CopyBuffer.
type writerOnly struct{ io.Writer }

var (
	inBufs       = sync.Pool{New: func() any { b := make([]byte, batchPlain+1); return &b }}
	outBufs      = sync.Pool{New: func() any { b := make([]byte, keyUpdateRoom+batchRecords*(maxPlain+maxOverhead)); return &b }}
	smallOutBufs = sync.Pool{New: func() any { b := make([]byte, keyUpdateRecordLen+maxPlain+maxOverhead); return &b }}
)

func getIn() *[]byte  { return inBufs.Get().(*[]byte) }
func putIn(b *[]byte) { inBufs.Put(b) }

// getOut is a buffer for a batch of records, or for one if small.
func getOut(small bool) *[]byte {
	if small {
		return smallOutBufs.Get().(*[]byte)
	}
	return outBufs.Get().(*[]byte)
}

func putOut(b *[]byte) {
	if len(*b) < batchRecords*maxPlain {
		smallOutBufs.Put(b)
	} else {
		outBufs.Put(b)
	}
}
