// Package thumb turns an image stream into a small thumbnail with bounded
// memory. It knows images and nothing else: which file, which user and where
// thumbnails are kept are the caller's (package preview).
//
// Memory is what an image costs: a decoder allocates the whole picture
// (width × height × bytes per pixel) however small the file, so a 1 KB PNG
// claiming 60,000 × 60,000 pixels would ask for 14 GB. Make therefore reads
// the header alone first (image.DecodeConfig) and refuses, before a single
// pixel is decoded, an image over the pixel budget (Limits.MaxPixels) or a
// file over the input limit (Limits.MaxInput). What passes is decoded under
// a weighted semaphore holding the picture's estimated size against
// Limits.Memory, so any number of parallel requests hold at most that much
// decoded pixels at once (one image larger than the whole budget runs
// alone). The context is checked on every read of the input: a cancelled
// request stops its decode at the decoder's next read.
//
// Formats: JPEG (with its EXIF orientation applied), PNG, GIF (the first
// frame) and WebP. Output: JPEG, or PNG when the thumbnail has transparency.
package thumb

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"
	"golang.org/x/sync/semaphore"

	"netdisk/errs"
	"netdisk/internal/zero"
)

// Sizes are the thumbnail sizes made, in pixels of the longer side: every
// requested size snaps to one of them (Bucket), so a client's choice of
// sizes cannot multiply the work and the cache.
var Sizes = []int{64, 256, 1024}

// DefaultSize is the size of a request that names none.
const DefaultSize = 256

// Bucket snaps a requested size to the smallest of Sizes at least as large
// (the largest for anything above it; DefaultSize for n ≤ 0).
func Bucket(n int) int {
	if n <= 0 {
		return DefaultSize
	}
	for _, s := range Sizes {
		if n <= s {
			return s
		}
	}
	return Sizes[len(Sizes)-1]
}

// Limits bound what one thumbnail may cost. Zero fields take the defaults.
type Limits struct {
	// MaxPixels is the largest picture decoded, width × height
	// (default 40,000,000: a 40 MP photo).
	MaxPixels int64
	// MaxInput is the largest file read, in bytes (default 64 MiB).
	MaxInput int64
	// Memory is the decoded pixels, in bytes, all decodes together may
	// hold at once (default 256 MiB).
	Memory int64
}

// Defaults of Limits.
const (
	DefaultMaxPixels = 40_000_000
	DefaultMaxInput  = 64 << 20
	DefaultMemory    = 256 << 20
)

// Maker makes thumbnails under one set of limits; its methods are safe for
// concurrent use.
type Maker struct {
	lim Limits
	sem *semaphore.Weighted
}

// New returns a Maker with limits l (zero fields: the defaults).
func New(l Limits) *Maker {
	zero.OrDefault(&l.MaxPixels, DefaultMaxPixels)
	zero.OrDefault(&l.MaxInput, DefaultMaxInput)
	zero.OrDefault(&l.Memory, DefaultMemory)
	return &Maker{lim: l, sem: semaphore.NewWeighted(l.Memory)}
}

// Limits returns the maker's limits, defaults filled in.
func (m *Maker) Limits() Limits { return m.lim }

// Thumb is a made thumbnail.
type Thumb struct {
	Data        []byte
	ContentType string // image/jpeg or image/png
	Width       int
	Height      int
}

// Make reads the image in r (size bytes long) and returns its thumbnail,
// fitted inside a square of Bucket(box) pixels; an image already smaller is
// not enlarged. r is read from its start and seeked back to it once, after
// the header.
//
// Errors: errs.Unsupported (415) for what is not a JPEG, PNG, GIF or WebP,
// an image over the limits, and a damaged one; errs.Canceled when ctx ends.
// Nothing is decoded before the header has passed the limits.
func (m *Maker) Make(ctx context.Context, r io.ReadSeeker, size int64, box int) (Thumb, error) {
	const op = "thumb.Make"
	box = Bucket(box)
	if size > m.lim.MaxInput {
		return Thumb{}, errs.Errorf(op, errs.Unsupported, "image is %s, over the %s limit for thumbnails", human(size), human(m.lim.MaxInput))
	}
	// Each pass over r reads through a fresh limit: a LimitReader counts
	// what it has passed, not where r stands.
	input := func() io.Reader { return &ctxReader{ctx: ctx, r: io.LimitReader(r, m.lim.MaxInput)} }
	cfg, format, err := image.DecodeConfig(bufio.NewReaderSize(input(), 4096))
	if err != nil {
		return Thumb{}, refusal(ctx, op, "", err)
	}
	pixels := int64(cfg.Width) * int64(cfg.Height)
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return Thumb{}, errs.Errorf(op, errs.Unsupported, "damaged %s: %d × %d pixels", format, cfg.Width, cfg.Height)
	}
	if pixels > m.lim.MaxPixels {
		return Thumb{}, errs.Errorf(op, errs.Unsupported, "%s of %d × %d pixels is over the %d MP limit for thumbnails",
			format, cfg.Width, cfg.Height, m.lim.MaxPixels/1_000_000)
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return Thumb{}, errs.E(op, errs.Other, "", fmt.Errorf("rewind: %w", err))
	}
	orientation := 1
	if format == "jpeg" {
		// The EXIF block sits in the first segments, within 64 KiB + a
		// few markers; read it apart, then rewind again for the decode.
		head := make([]byte, min(size, 128<<10))
		n, _ := io.ReadFull(input(), head)
		orientation = exifOrientation(head[:n])
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			return Thumb{}, errs.E(op, errs.Other, "", fmt.Errorf("rewind: %w", err))
		}
	}

	weight := min(decodeBytes(cfg.ColorModel, pixels), m.lim.Memory)
	if err := m.sem.Acquire(ctx, weight); err != nil {
		return Thumb{}, errs.E(op, errs.Canceled, "", err)
	}
	src, err := decode(format, bufio.NewReaderSize(input(), 32<<10))
	if err != nil {
		m.sem.Release(weight)
		return Thumb{}, refusal(ctx, op, format, err)
	}
	if b := src.Bounds(); int64(b.Dx())*int64(b.Dy()) > m.lim.MaxPixels {
		// A decoder that disagrees with its own header: never scale it.
		m.sem.Release(weight)
		return Thumb{}, errs.Errorf(op, errs.Unsupported, "damaged %s: frame larger than its header says", format)
	}
	dst := scale(src, box)
	src = nil
	m.sem.Release(weight)
	if err := ctx.Err(); err != nil {
		return Thumb{}, errs.E(op, errs.Canceled, "", err)
	}
	out := orient(dst, orientation)
	return encode(out)
}

// decode decodes the first picture of a stream whose format DecodeConfig
// named (GIF: the first frame only, never the whole animation).
func decode(format string, r io.Reader) (image.Image, error) {
	switch format {
	case "jpeg":
		return jpeg.Decode(r)
	case "png":
		return png.Decode(r)
	case "gif":
		return gif.Decode(r)
	case "webp":
		return webp.Decode(r)
	}
	return nil, image.ErrFormat
}

// decodeBytes estimates what a decoder holds for a picture: its pixels at
// the colour model's size, a quarter more for the decoder's own buffers
// (progressive JPEG coefficients, PNG rows), and a floor.
func decodeBytes(cm color.Model, pixels int64) int64 {
	var bpp int64 = 4
	switch cm {
	case color.GrayModel:
		bpp = 1
	case color.Gray16Model:
		bpp = 2
	case color.YCbCrModel, color.NYCbCrAModel:
		bpp = 3 // 4:4:4 at worst
	case color.RGBA64Model, color.NRGBA64Model:
		bpp = 8
	default:
		if _, ok := cm.(color.Palette); ok {
			bpp = 1
		}
	}
	return pixels*bpp*5/4 + 1<<20
}

// scale fits src inside a box × box square without enlarging it.
func scale(src image.Image, box int) *image.RGBA {
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	if w > box || h > box {
		if w >= h {
			w, h = box, max(1, int(int64(h)*int64(box)/int64(w)))
		} else {
			w, h = max(1, int(int64(w)*int64(box)/int64(h))), box
		}
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	// First the mean of blocks, down to at least twice the thumbnail's
	// size (fast: reduce.go); then BiLinear, a kernel that widens with the
	// reduction so every pixel counts (ApproxBiLinear samples and shimmers
	// on photos).
	if k := min(b.Dx()/(2*w), b.Dy()/(2*h)); k >= 2 {
		if mid := reduce(src, k); mid != nil {
			src, b = mid, mid.Bounds()
		}
	}
	draw.BiLinear.Scale(dst, dst.Bounds(), src, b, draw.Src, nil)
	return dst
}

func encode(img *image.RGBA) (Thumb, error) {
	var buf bytes.Buffer
	t := Thumb{Width: img.Bounds().Dx(), Height: img.Bounds().Dy()}
	if img.Opaque() {
		t.ContentType = "image/jpeg"
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 82}); err != nil {
			return Thumb{}, errs.E("thumb.encode", errs.Other, "", err)
		}
	} else {
		t.ContentType = "image/png"
		if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
			return Thumb{}, errs.E("thumb.encode", errs.Other, "", err)
		}
	}
	t.Data = buf.Bytes()
	return t, nil
}

// refusal classifies a decoder's error: the context's end, an unknown
// format, or a damaged image (truncated, garbage, unsupported variant).
func refusal(ctx context.Context, op, format string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return errs.E(op, errs.Canceled, "", cerr)
	}
	if errors.Is(err, image.ErrFormat) {
		return errs.Errorf(op, errs.Unsupported, "not an image netdisk makes thumbnails of (JPEG, PNG, GIF, WebP)")
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("truncated")
	}
	if format == "" {
		format = "image"
	}
	return errs.Errorf(op, errs.Unsupported, "damaged %s: %v", format, err)
}

// ctxReader ends a read once ctx is done: decoders read as they go, so a
// cancelled request stops its decode at the next read.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func human(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
