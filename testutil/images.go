package testutil

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
)

// PNGBomb is a decompression bomb: a valid PNG header claiming w × h RGBA
// pixels with a tiny compressed IDAT (about 1 KB in all), which a decoder
// that trusts the header would allocate w × h × 4 bytes for.
func PNGBomb(w, h uint32) []byte {
	chunk := func(typ string, data []byte) []byte {
		var b bytes.Buffer
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		b.WriteString(typ)
		b.Write(data)
		binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
		return b.Bytes()
	}
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8 bits, RGBA
	b.Write(chunk("IHDR", ihdr))
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	zw.Write(make([]byte, 64<<10)) // a few rows of zeros: a few hundred bytes compressed
	zw.Close()
	b.Write(chunk("IDAT", z.Bytes()))
	b.Write(chunk("IEND", nil))
	return b.Bytes()
}
