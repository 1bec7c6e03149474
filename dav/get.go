package dav

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
)

// serveFile answers GET and HEAD of the file rd reads, and closes rd.
func (h *Handler) serveFile(w http.ResponseWriter, r *http.Request, rd *drive.Reader) (int, error) {
	defer rd.Close()
	n := rd.Node()
	hd := w.Header()
	hd.Set("ETag", ETag(n))
	setContentHeaders(hd, n)
	hd.Set("Accept-Ranges", "bytes")
	setOCChecksum(hd, n)
	return 0, ServeReader(w, r, h.D, rd, n.Path, n.ModTime, h.Log)
}

// ServeReader answers GET or HEAD with rd's bytes, a version of name last
// modified at modtime, for WebDAV and for the API's downloads alike.
// http.ServeContent does the conditional and Range logic; sendfileWriter lets
// its final copy go from the chunk files to the socket without passing
// through user space.
//
// What the body needs first is opened before the status is sent (see
// sendfileWriter.WriteHeader): a store that cannot serve it (S3 away) makes
// the answer the error's (503 with Retry-After), not a 200 whose body stops.
// Then nothing was sent: ServeReader removes the file's headers and returns
// the error for the caller to answer. A failure after the status is logged,
// counted as the failure it is, and aborts the connection, so the client
// sees a truncated body, never a clean end of a short one.
func ServeReader(w http.ResponseWriter, r *http.Request, d *drive.Drive, rd *drive.Reader, name string, modtime time.Time, log *slog.Logger) error {
	sw := &sendfileWriter{ResponseWriter: w, d: d, r: r, rd: rd}
	http.ServeContent(sw, r, name, modtime, rd)
	switch {
	case sw.openErr != nil:
		for _, k := range []string{"Content-Length", "Content-Range", "Content-Type", "ETag", "Last-Modified", "Accept-Ranges", "OC-Checksum"} {
			w.Header().Del(k)
		}
		return sw.openErr
	case sw.sendErr != nil && !errs.Is(sw.sendErr, errs.Canceled):
		log.Error("response cut after its status", "method", r.Method, "path", r.URL.Path, "err", sw.sendErr)
		errs.AbortResponse(w, sw.sendErr)
	}
	return nil
}

// sendfileWriter intercepts the io.CopyN that http.ServeContent ends with: when
// the source is our drive.Reader (one range or the whole file), it sends each
// chunk segment as an *os.File through the connection's ReadFrom (sendfile).
// Multipart ranges come through a pipe and take the ordinary path.
//
// It also holds back a 200 or 206 until the chunk the body starts with is
// open (drive.Reader.Ready): if that fails, no status is sent (openErr) and
// the caller of ServeReader answers the error instead. Reading failures after the status
// are kept in sendErr (writing failures are the client's going away).
type sendfileWriter struct {
	http.ResponseWriter
	d  *drive.Drive
	r  *http.Request
	rd *drive.Reader

	openErr error // the body's first chunk could not be opened: nothing sent
	sendErr error // reading the body failed after the status
}

func (s *sendfileWriter) WriteHeader(code int) {
	if s.openErr != nil {
		return
	}
	if (code == http.StatusOK || code == http.StatusPartialContent) && s.r.Method != http.MethodHead {
		// ServeContent has sought the reader to the (first) range's start.
		if err := s.rd.Ready(); err != nil {
			s.openErr = err
			return
		}
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *sendfileWriter) Write(p []byte) (int, error) {
	if s.openErr != nil {
		return 0, s.openErr
	}
	return s.ResponseWriter.Write(p)
}

// fail keeps the first reading failure.
func (s *sendfileWriter) fail(err error) error {
	if s.sendErr == nil {
		s.sendErr = err
	}
	return err
}

func (s *sendfileWriter) ReadFrom(src io.Reader) (int64, error) {
	if s.openErr != nil {
		return 0, s.openErr
	}
	lr, ok := src.(*io.LimitedReader)
	if !ok || lr.R != io.Reader(s.rd) || s.rd.Node().IsSymlink() {
		return io.Copy(struct{ io.Writer }{s.ResponseWriter}, failReader{src, s})
	}
	off, err := s.rd.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, s.fail(err)
	}
	var total int64
	segs := s.rd.Segments(off, lr.N)
	// The next chunks are opened, and their reading from the disk started
	// (willNeed), while this one is sent: chunk files are written past the
	// page cache (dedup's O_DIRECT), and sendfile's own read-ahead would
	// leave the disk idle at every chunk boundary.
	open := make([]io.ReadSeekCloser, len(segs))
	defer func() {
		for _, f := range open {
			if f != nil {
				f.Close()
			}
		}
	}()
	if len(segs) > 0 {
		open[0] = s.rd.Take(segs[0]) // opened before the status
	}
	for i, seg := range segs {
		for j := i; j < min(i+1+readAheadChunks, len(segs)); j++ {
			if open[j] == nil {
				f, err := s.d.OpenSegment(s.r.Context(), segs[j])
				if err != nil && j > i {
					break // its turn comes: send what can be sent first
				}
				if err != nil {
					return total, s.fail(err)
				}
				open[j] = f
				willNeed(f, segs[j].Offset, segs[j].Length)
			}
		}
		n, err := s.copySegment(open[i], seg)
		open[i].Close()
		open[i] = nil
		total += n
		if err != nil {
			return total, err
		}
	}
	lr.N -= total
	return total, nil
}

// failReader keeps a reading failure (not the end) in the writer.
type failReader struct {
	r io.Reader
	s *sendfileWriter
}

func (f failReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil && err != io.EOF {
		f.s.fail(err)
	}
	return n, err
}

// readAheadChunks is how many chunks past the one being sent are read from
// the disk ahead (4 MiB each by default): measured with bench/webdav on this
// machine, 2 gave 0.74× rclone's GET of a file it just wrote (from its page
// cache), 8 gave 0.69–0.83× (the disk's pace), none 0.61×.
const readAheadChunks = 8

// copySegment sends one segment; a failure to read it (not to write it)
// is kept in sendErr, as is a chunk shorter than its record.
func (s *sendfileWriter) copySegment(f io.ReadSeeker, seg drive.Segment) (int64, error) {
	if _, err := f.Seek(seg.Offset, io.SeekStart); err != nil {
		return 0, s.fail(err)
	}
	var n int64
	var err error
	if osf, ok := f.(*os.File); ok && s.r.ProtoMajor == 1 && isReaderFrom(s.ResponseWriter) {
		// *os.File inside an io.LimitedReader is what net.TCPConn.ReadFrom
		// turns into sendfile(2), and what tlsbulk.Conn.ReadFrom (HTTPS,
		// HTTP/1.1) reads straight into the records it seals. HTTP/2
		// has neither: a middleware's ReadFrom would copy 32 KiB at a
		// time into its frames, the copy below 256 KiB.
		n, err = s.ResponseWriter.(io.ReaderFrom).ReadFrom(&io.LimitedReader{R: osf, N: seg.Length})
	} else {
		// HTTP/2 (or a store without files) must pass the bytes through
		// here. net/http's own copy takes 32 KiB at a time; each write
		// costs a trip through the HTTP/2 framer's goroutine or a
		// flush of HTTP/1.1's buffers and a file read, so a larger
		// buffer makes the encryption, not the trips, the cost.
		bp := copyBufs.Get().(*[]byte)
		n, err = io.CopyBuffer(struct{ io.Writer }{s.ResponseWriter}, io.LimitReader(failReader{f, s}, seg.Length), *bp)
		copyBufs.Put(bp)
	}
	if (err == nil || err == io.EOF) && n < seg.Length {
		err = s.fail(errs.Errorf("dav.Get", errs.Other, "chunk %s ends %d bytes short of its record", seg.Key, seg.Length-n))
	}
	return n, err
}

// copyBufSize is the buffer of a copy that cannot use sendfile.
const copyBufSize = 256 << 10

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

func isReaderFrom(w io.Writer) bool {
	_, ok := w.(io.ReaderFrom)
	return ok
}

func (s *sendfileWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *sendfileWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// setOCChecksum sets ownCloud's OC-Checksum header to the content's SHA-1
// once it is known; an unknown checksum is left out, never guessed.
func setOCChecksum(hd http.Header, n meta.Node) {
	if n.SHA1 != "" {
		hd.Set("OC-Checksum", "SHA1:"+n.SHA1)
	}
}
