package thumb

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"runtime"
	"strings"
	"testing"

	"netdisk/errs"
	"netdisk/testutil"
)

// gradient is a w × h picture with a red left edge and a blue right one, so
// a test sees which way a thumbnail lies.
func gradient(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r := uint8(255 * (w - 1 - x) / max(1, w-1))
			img.SetRGBA(x, y, color.RGBA{r, uint8(y % 256), 255 - r, 255})
		}
	}
	return img
}

func encJPEG(t testing.TB, img image.Image) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encPNG(t testing.TB, img image.Image) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encGIF(t testing.TB, img image.Image) []byte {
	var b bytes.Buffer
	if err := gif.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// webp1x1 is a 1 × 1 lossless WebP (VP8L): the standard library has no WebP
// encoder, and this one is small enough to read (and to make a bomb of).
var webp1x1 = must(base64.StdEncoding.DecodeString("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA=="))

// webpLossy1x1 is a 1 × 1 lossy WebP (VP8).
var webpLossy1x1 = must(base64.StdEncoding.DecodeString("UklGRiIAAABXRUJQVlA4IBYAAAAwAQCdASoBAAEADsD+JaQAA3AAAAAA"))

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// jpegBomb is a real small JPEG whose frame header claims w × h pixels.
func jpegBomb(t testing.TB, w, h uint16) []byte {
	b := encJPEG(t, gradient(16, 16))
	for i := 2; i+9 < len(b); {
		if b[i] != 0xFF {
			t.Fatal("jpeg walk lost")
		}
		if b[i+1] == 0xC0 { // baseline frame header: length, precision, height, width
			binary.BigEndian.PutUint16(b[i+5:], h)
			binary.BigEndian.PutUint16(b[i+7:], w)
			return b
		}
		i += 2 + int(binary.BigEndian.Uint16(b[i+2:]))
	}
	t.Fatal("no SOF0 in encoded JPEG")
	return nil
}

// gifBomb is a real small GIF whose logical screen and frame claim w × h.
func gifBomb(t testing.TB, w, h uint16) []byte {
	pal := image.NewPaletted(image.Rect(0, 0, 4, 4), color.Palette{color.Black, color.White})
	b := encGIF(t, pal)
	binary.LittleEndian.PutUint16(b[6:], w) // logical screen
	binary.LittleEndian.PutUint16(b[8:], h)
	i := bytes.IndexByte(b[13+6:], 0x2C) + 13 + 6 // image descriptor after the global table
	binary.LittleEndian.PutUint16(b[i+5:], w)
	binary.LittleEndian.PutUint16(b[i+7:], h)
	return b
}

// webpBomb is the 1 × 1 lossless WebP with its VP8L header claiming
// 16384 × 16384 pixels (the format's largest).
func webpBomb() []byte {
	b := bytes.Clone(webp1x1)
	// VP8L: signature 0x2f, then 14 bits width-1 and 14 bits height-1, LSB first.
	v := binary.LittleEndian.Uint32(b[21:])
	v &^= 1<<28 - 1
	v |= 16383 | 16383<<14
	binary.LittleEndian.PutUint32(b[21:], v)
	return b
}

func make1(t *testing.T, m *Maker, data []byte, box int) (Thumb, error) {
	t.Helper()
	return m.Make(context.Background(), bytes.NewReader(data), int64(len(data)), box)
}

func TestFormats(t *testing.T) {
	m := New(Limits{})
	src := gradient(400, 200)
	for _, tc := range []struct {
		name string
		data []byte
		box  int
		w, h int
	}{
		{"jpeg", encJPEG(t, src), 256, 256, 128},
		{"png", encPNG(t, src), 64, 64, 32},
		{"gif", encGIF(t, src), 1024, 400, 200}, // smaller than the box: not enlarged
		{"webp lossless", webp1x1, 256, 1, 1},
		{"webp lossy", webpLossy1x1, 256, 1, 1},
		{"jpeg tall", encJPEG(t, gradient(100, 3000)), 300, 34, 1024}, // 300 snaps to 1024
	} {
		th, err := make1(t, m, tc.data, tc.box)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		img, _, err := image.Decode(bytes.NewReader(th.Data))
		if err != nil {
			t.Errorf("%s: thumbnail does not decode: %v", tc.name, err)
			continue
		}
		if b := img.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h || th.Width != tc.w || th.Height != tc.h {
			t.Errorf("%s: thumbnail %v (%d×%d), want %d×%d", tc.name, b, th.Width, th.Height, tc.w, tc.h)
		}
	}
}

// A transparent image keeps its transparency (PNG); an opaque one is JPEG.
func TestOutputType(t *testing.T) {
	m := New(Limits{})
	clear := image.NewNRGBA(image.Rect(0, 0, 50, 50))
	th, err := make1(t, m, encPNG(t, clear), 64)
	if err != nil || th.ContentType != "image/png" {
		t.Fatalf("transparent png: %q, %v", th.ContentType, err)
	}
	th, err = make1(t, m, encPNG(t, gradient(50, 50)), 64)
	if err != nil || th.ContentType != "image/jpeg" {
		t.Fatalf("opaque png: %q, %v", th.ContentType, err)
	}
}

func TestBucket(t *testing.T) {
	for in, want := range map[int]int{-1: 256, 0: 256, 1: 64, 64: 64, 65: 256, 256: 256, 257: 1024, 5000: 1024} {
		if got := Bucket(in); got != want {
			t.Errorf("Bucket(%d) = %d, want %d", in, got, want)
		}
	}
}

// A decompression bomb of every format is refused from its header: the
// refusal allocates next to nothing, where decoding would allocate
// gigabytes.
func TestBombsRefusedFromHeader(t *testing.T) {
	m := New(Limits{})
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"png 60000x60000", testutil.PNGBomb(60000, 60000)},
		{"png 7000x7000", testutil.PNGBomb(7000, 7000)}, // 49 MP: just over the budget
		{"jpeg 65000x65000", jpegBomb(t, 65000, 65000)},
		{"gif 65535x65535", gifBomb(t, 65535, 65535)},
		{"webp 16384x16384", webpBomb()},
	} {
		if len(tc.data) > 2048 {
			t.Fatalf("%s: the bomb is %d bytes, want ~1 KB", tc.name, len(tc.data))
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := make1(t, m, tc.data, 256)
		runtime.ReadMemStats(&after)
		if !errs.Is(err, errs.Unsupported) || !strings.Contains(errs.Message(err), "MP limit") {
			t.Errorf("%s: %v, want Unsupported over the MP limit", tc.name, err)
		}
		if strings.Contains(errs.Message(err), "\n") {
			t.Errorf("%s: message of several lines: %q", tc.name, errs.Message(err))
		}
		// TotalAlloc only grows: it bounds the heap's peak during the call.
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("%s: refusing it allocated %d bytes, want < 1 MiB", tc.name, got)
		}
	}
}

// Truncated and garbage files of every format are refused as damaged, never
// a panic or an internal error.
func TestDamaged(t *testing.T) {
	m := New(Limits{})
	src := gradient(120, 80)
	good := map[string][]byte{"jpeg": encJPEG(t, src), "png": encPNG(t, src), "gif": encGIF(t, src), "webp": webpLossy1x1}
	for name, data := range good {
		for _, cut := range []int{len(data) / 2, len(data) - 3, 12} {
			if _, err := make1(t, m, data[:cut], 256); !errs.Is(err, errs.Unsupported) {
				t.Errorf("%s cut at %d: %v, want Unsupported", name, cut, err)
			}
		}
		// A valid header, then garbage.
		bad := bytes.Clone(data)
		for i := len(bad) / 3; i < len(bad); i++ {
			bad[i] = byte(i * 7)
		}
		if _, err := make1(t, m, bad, 256); err != nil && !errs.Is(err, errs.Unsupported) {
			t.Errorf("%s with garbage: %v, want a thumbnail or Unsupported", name, err)
		}
	}
	for _, data := range [][]byte{nil, []byte("hello, world"), []byte("%PDF-1.7\n"), bytes.Repeat([]byte{0xFF}, 4096)} {
		_, err := make1(t, m, data, 256)
		if !errs.Is(err, errs.Unsupported) {
			t.Errorf("%q: %v, want Unsupported", data[:min(len(data), 10)], err)
		}
	}
}

func TestInputLimit(t *testing.T) {
	m := New(Limits{MaxInput: 100})
	data := encPNG(t, gradient(300, 300))
	_, err := make1(t, m, data, 256)
	if !errs.Is(err, errs.Unsupported) || !strings.Contains(errs.Message(err), "limit") {
		t.Fatalf("%d-byte file under a 100-byte limit: %v", len(data), err)
	}
}

// Decodes wait for memory: with the whole budget held, Make waits and ends
// with its context; once the memory is back it runs.
func TestMemoryBudgetWaits(t *testing.T) {
	m := New(Limits{Memory: 8 << 20})
	data := encJPEG(t, gradient(200, 100))
	if err := m.sem.Acquire(context.Background(), 8<<20); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Make(ctx, bytes.NewReader(data), int64(len(data)), 64)
		done <- err
	}()
	cancel()
	if err := <-done; !errs.Is(err, errs.Canceled) {
		t.Fatalf("waiting for memory, then cancelled: %v", err)
	}
	m.sem.Release(8 << 20)
	if _, err := make1(t, m, data, 64); err != nil {
		t.Fatal(err)
	}
}

// A cancelled context stops the decode at its next read.
func TestContext(t *testing.T) {
	m := New(Limits{})
	data := encPNG(t, gradient(300, 300))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Make(ctx, bytes.NewReader(data), int64(len(data)), 64)
	if !errs.Is(err, errs.Canceled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// withOrientation inserts an EXIF block with orientation o after SOI.
func withOrientation(jpg []byte, o uint16, bigEndian bool) []byte {
	var tiff bytes.Buffer
	var bo binary.ByteOrder = binary.LittleEndian
	tiff.WriteString("II")
	if bigEndian {
		bo = binary.BigEndian
		tiff.Reset()
		tiff.WriteString("MM")
	}
	binary.Write(&tiff, bo, uint16(42))
	binary.Write(&tiff, bo, uint32(8))
	binary.Write(&tiff, bo, uint16(2)) // two entries: orientation is not the first
	for _, e := range [][3]uint32{{0x010F, 2, 0}, {0x0112, 3, uint32(o)}} {
		binary.Write(&tiff, bo, uint16(e[0]))
		binary.Write(&tiff, bo, uint16(e[1]))
		binary.Write(&tiff, bo, uint32(1))
		if e[1] == 3 {
			binary.Write(&tiff, bo, uint16(e[2]))
			binary.Write(&tiff, bo, uint16(0))
		} else {
			binary.Write(&tiff, bo, uint32(0))
		}
	}
	binary.Write(&tiff, bo, uint32(0))
	seg := append([]byte("Exif\x00\x00"), tiff.Bytes()...)
	var out bytes.Buffer
	out.Write(jpg[:2])
	out.Write([]byte{0xFF, 0xE1})
	binary.Write(&out, binary.BigEndian, uint16(len(seg)+2))
	out.Write(seg)
	out.Write(jpg[2:])
	return out.Bytes()
}

// A JPEG's EXIF orientation is applied: a photo stored landscape with
// orientation 6 (turn clockwise) becomes portrait, its left (red) edge on
// top.
func TestEXIFOrientation(t *testing.T) {
	m := New(Limits{})
	base := encJPEG(t, gradient(200, 100))
	for _, tc := range []struct {
		o      uint16
		be     bool
		w, h   int
		redTop bool // red at the top middle (else red at the left middle)
	}{
		{1, false, 64, 32, false},
		{6, false, 32, 64, true},
		{6, true, 32, 64, true},
		{8, false, 32, 64, false},
		{3, true, 64, 32, false},
	} {
		th, err := make1(t, m, withOrientation(base, tc.o, tc.be), 64)
		if err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(bytes.NewReader(th.Data))
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h {
			t.Errorf("orientation %d: %v, want %d×%d", tc.o, b, tc.w, tc.h)
			continue
		}
		red := func(x, y int) bool { r, _, b, _ := img.At(x, y).RGBA(); return r > b+0x4000 }
		switch {
		case tc.o == 1 && !red(1, tc.h/2):
			t.Errorf("orientation 1: left edge not red")
		case tc.o == 3 && red(1, tc.h/2):
			t.Errorf("orientation 3: left edge still red")
		case tc.redTop && !red(tc.w/2, 1):
			t.Errorf("orientation %d: top not red", tc.o)
		case tc.o == 8 && !red(tc.w/2, tc.h-2):
			t.Errorf("orientation 8: bottom not red")
		}
	}
	if got := exifOrientation([]byte{0xFF, 0xD8, 0xFF, 0xE1, 0xFF, 0xFF}); got != 1 {
		t.Errorf("a segment running past the buffer: %d", got)
	}
}

// The block mean of every pixel type it takes is the mean of the block;
// what it does not take is left to the kernel.
func TestReduce(t *testing.T) {
	rgba := image.NewRGBA(image.Rect(0, 0, 4, 2))
	for i := range 4 {
		rgba.SetRGBA(i, 0, color.RGBA{uint8(40 * i), 100, 0, 255})
		rgba.SetRGBA(i, 1, color.RGBA{uint8(40 * i), 200, 0, 255})
	}
	nrgba := image.NewNRGBA(image.Rect(0, 0, 2, 2))
	nrgba.SetNRGBA(0, 0, color.NRGBA{200, 0, 0, 255}) // the other three transparent
	ycc := image.NewYCbCr(image.Rect(0, 0, 4, 4), image.YCbCrSubsampleRatio420)
	for i := range ycc.Y {
		ycc.Y[i] = 100
	}
	for i := range ycc.Cb {
		ycc.Cb[i], ycc.Cr[i] = 128, 128
	}
	gray := image.NewGray(image.Rect(0, 0, 2, 2))
	copy(gray.Pix, []byte{0, 100, 200, 100})
	for _, tc := range []struct {
		name string
		src  image.Image
		x, y int
		want color.RGBA
	}{
		{"rgba", rgba, 1, 0, color.RGBA{100, 150, 0, 255}},
		{"nrgba", nrgba, 0, 0, color.RGBA{50, 0, 0, 63}},
		{"ycbcr", ycc, 1, 1, color.RGBA{100, 100, 100, 255}},
		{"gray", gray, 0, 0, color.RGBA{100, 100, 100, 255}},
	} {
		out := reduce(tc.src, 2)
		if out == nil || out.RGBAAt(tc.x, tc.y) != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, out.RGBAAt(tc.x, tc.y), tc.want)
		}
	}
	if reduce(image.NewPaletted(image.Rect(0, 0, 8, 8), color.Palette{color.Black}), 2) != nil {
		t.Error("a paletted image was reduced")
	}
}
