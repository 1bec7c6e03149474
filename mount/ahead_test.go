package mount

import (
	"bytes"
	"testing"
)

// TestAheadBuffers: a small file's bytes are held in a buffer of its size,
// not a whole chunk (allocating 4 MiB per file halved the rate of creating
// 1 KiB files), and a file that outgrows it gets its whole chunk once,
// with the bytes written so far kept in order.
func TestAheadBuffers(t *testing.T) {
	const cs = 4 << 20
	a := &ahead{cs: cs, slots: make(chan struct{}, aheadInFlight), pool: make(chan []byte, aheadInFlight+1)}
	var want []byte
	put := func(n int) {
		t.Helper()
		data := bytes.Repeat([]byte{byte(len(want))}, n)
		if !a.write(data, int64(len(want))) {
			t.Fatalf("in-order write at %d refused", len(want))
		}
		want = append(want, data...)
	}
	put(1024)
	if c := cap(a.buf); c > aheadFirstBuf {
		t.Fatalf("a 1 KiB file holds a %d-byte buffer; want at most %d", c, aheadFirstBuf)
	}
	for len(want) <= aheadFirstBuf {
		put(32 << 10)
	}
	if c := cap(a.buf); c != cs {
		t.Fatalf("past %d bytes the buffer holds %d; want the whole chunk (%d)", aheadFirstBuf, c, cs)
	}
	if !bytes.Equal(a.buf, want) {
		t.Fatal("the buffer lost or reordered bytes when it grew")
	}
	if a.end != int64(len(want)) {
		t.Fatalf("end %d; want %d", a.end, len(want))
	}
}
