package thumb

import (
	"image"
	"image/color"
)

// reduce shrinks src by an integer factor k, each output pixel the mean of
// a k × k block, for the decoders' common pixel types (JPEG's YCbCr, PNG's
// RGBA, NRGBA and Gray); nil for others. A kernel scaler reads every source
// pixel through its kernel, and a 12 MP photo made that way costs seconds;
// the mean of a block is a proper low-pass filter read once in tight loops,
// so the kernel then only finishes a picture a few times the thumbnail's
// size.
func reduce(src image.Image, k int) *image.RGBA {
	b := src.Bounds()
	w, h := b.Dx()/k, b.Dy()/k
	if k < 2 || w < 1 || h < 1 {
		return nil
	}
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	n := uint32(k * k)
	set := func(ox, oy int, r, g, b, a uint32) {
		i := out.PixOffset(ox, oy)
		out.Pix[i], out.Pix[i+1], out.Pix[i+2], out.Pix[i+3] = uint8(r), uint8(g), uint8(b), uint8(a)
	}
	switch s := src.(type) {
	case *image.YCbCr:
		// The colour conversion is affine, so the mean of the block's luma
		// converted is the mean of its colours (but for clamping); chroma
		// is coarse already, its mean taken at four points of the block.
		q := max(1, k/4)
		for oy := 0; oy < h; oy++ {
			y0 := b.Min.Y + oy*k
			for ox := 0; ox < w; ox++ {
				x0 := b.Min.X + ox*k
				var sy uint32
				for y := y0; y < y0+k; y++ {
					i := s.YOffset(x0, y)
					for _, v := range s.Y[i : i+k] {
						sy += uint32(v)
					}
				}
				var scb, scr uint32
				for _, p := range [4][2]int{{q, q}, {k - 1 - q, q}, {q, k - 1 - q}, {k - 1 - q, k - 1 - q}} {
					ci := s.COffset(x0+p[0], y0+p[1])
					scb += uint32(s.Cb[ci])
					scr += uint32(s.Cr[ci])
				}
				r, g, bl := color.YCbCrToRGB(uint8(sy/n), uint8(scb/4), uint8(scr/4))
				set(ox, oy, uint32(r), uint32(g), uint32(bl), 255)
			}
		}
	case *image.RGBA, *image.NRGBA:
		var pix []byte
		var off func(x, y int) int
		premul := false
		if p, ok := s.(*image.RGBA); ok {
			pix, off = p.Pix, p.PixOffset
		} else {
			p := s.(*image.NRGBA)
			pix, off, premul = p.Pix, p.PixOffset, true
		}
		for oy := 0; oy < h; oy++ {
			y0 := b.Min.Y + oy*k
			for ox := 0; ox < w; ox++ {
				x0 := b.Min.X + ox*k
				var sr, sg, sb, sa uint32
				for y := y0; y < y0+k; y++ {
					i := off(x0, y)
					row := pix[i : i+4*k]
					for j := 0; j < len(row); j += 4 {
						r, g, bl, a := uint32(row[j]), uint32(row[j+1]), uint32(row[j+2]), uint32(row[j+3])
						if premul {
							r, g, bl = r*a/255, g*a/255, bl*a/255
						}
						sr, sg, sb, sa = sr+r, sg+g, sb+bl, sa+a
					}
				}
				set(ox, oy, sr/n, sg/n, sb/n, sa/n)
			}
		}
	case *image.Gray:
		for oy := 0; oy < h; oy++ {
			y0 := b.Min.Y + oy*k
			for ox := 0; ox < w; ox++ {
				x0 := b.Min.X + ox*k
				var sv uint32
				for y := y0; y < y0+k; y++ {
					i := s.PixOffset(x0, y)
					for _, v := range s.Pix[i : i+k] {
						sv += uint32(v)
					}
				}
				set(ox, oy, sv/n, sv/n, sv/n, 255)
			}
		}
	default:
		return nil
	}
	return out
}
