package chunker

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"hash"
	"math/rand/v2"
	"testing"
)

// checkPair writes pre1 to one digest and pre2 to another, then data in
// pieces cut at cuts through WriteMD5Pair, and compares both with crypto/md5
// over the same bytes.
func checkPair(t *testing.T, pre1, pre2, data []byte, cuts []int) {
	t.Helper()
	a, b := md5.New(), md5.New()
	a.Write(pre1)
	b.Write(pre2)
	rest := data
	for _, c := range cuts {
		c = min(c, len(rest))
		WriteMD5Pair(a, b, rest[:c])
		rest = rest[c:]
	}
	WriteMD5Pair(a, b, rest)
	wantA := md5.Sum(append(bytes.Clone(pre1), data...))
	wantB := md5.Sum(append(bytes.Clone(pre2), data...))
	if got := a.Sum(nil); !bytes.Equal(got, wantA[:]) {
		t.Fatalf("first digest (prefix %d, data %d, cuts %v): %x, want %x", len(pre1), len(data), cuts, got, wantA)
	}
	if got := b.Sum(nil); !bytes.Equal(got, wantB[:]) {
		t.Fatalf("second digest (prefix %d, data %d, cuts %v): %x, want %x", len(pre2), len(data), cuts, got, wantB)
	}
}

// Every alignment the pair meets: a fresh chunk digest beside a file digest
// at a block boundary (the upload's case), both inside a block with the same
// or other buffered bytes, different alignments (written one after the
// other), pieces of every small length, and a multi-chunk run with the chunk
// digest reset at each boundary as the writer does.
func TestMD5PairMatchesCryptoMD5(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 5000)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	prefixes := [][2]int{{0, 0}, {0, 64}, {0, 4 << 10}, {7, 7}, {7, 71}, {63, 127}, {1, 2}, {0, 63}, {64, 1}}
	for _, pp := range prefixes {
		pre1, pre2 := data[:pp[0]], bytes.Repeat([]byte{0xa5}, pp[1])
		for _, n := range []int{0, 1, 63, 64, 65, 127, 128, 129, 191, 1000, 4096, 4097} {
			checkPair(t, pre1, pre2, data[:n], nil)
			checkPair(t, pre1, pre2, data[:n], []int{1, 62, 1, 64, 129})
			checkPair(t, pre1, pre2, data[:n], []int{200, 3, 5})
		}
	}
	for range 200 {
		n := r.IntN(len(data))
		var cuts []int
		for k := r.IntN(6); k > 0; k-- {
			cuts = append(cuts, r.IntN(300))
		}
		checkPair(t, data[:r.IntN(200)], data[:r.IntN(200)], data[:n], cuts)
	}

	// A file of chunks of 1 KiB, fed as an upload feeds it.
	file := make([]byte, 10*1024+17)
	for i := range file {
		file[i] = byte(r.Uint32())
	}
	whole := md5.New()
	for off := 0; off < len(file); off += 1024 {
		c := file[off:min(off+1024, len(file))]
		chunk := md5.New()
		for len(c) > 0 {
			k := min(len(c), 1+r.IntN(700))
			WriteMD5Pair(chunk, whole, c[:k])
			c = c[k:]
		}
		want := md5.Sum(file[off:min(off+1024, len(file))])
		if got := chunk.Sum(nil); !bytes.Equal(got, want[:]) {
			t.Fatalf("chunk at %d: %x, want %x", off, got, want)
		}
	}
	if got, want := whole.Sum(nil), md5.Sum(file); !bytes.Equal(got, want[:]) {
		t.Fatalf("file: %x, want %x", got, want)
	}
}

// Digests that are not crypto/md5's are written one after the other.
func TestMD5PairOtherHashes(t *testing.T) {
	data := bytes.Repeat([]byte("netdisk"), 100)
	var a, b hash.Hash = sha1.New(), md5.New()
	WriteMD5Pair(a, b, data)
	if got, want := a.Sum(nil), sha1.Sum(data); !bytes.Equal(got, want[:]) {
		t.Fatalf("sha1 %x, want %x", got, want)
	}
	if got, want := b.Sum(nil), md5.Sum(data); !bytes.Equal(got, want[:]) {
		t.Fatalf("md5 %x, want %x", got, want)
	}
}

// The assembly and the Go form of the interleaved block agree.
func TestBlockDualMatchesGeneric(t *testing.T) {
	buf := make([]byte, 64*1000)
	for i := range buf {
		buf[i] = byte(i*131 + i>>8)
	}
	a1, a2 := [4]uint32{1, 2, 3, 4}, [4]uint32{5, 6, 7, 8}
	b1, b2 := a1, a2
	blockDual(&a1, &a2, buf)
	blockDualGeneric(&b1, &b2, buf)
	if a1 != b1 || a2 != b2 {
		t.Fatalf("blockDual %x %x, blockDualGeneric %x %x", a1, a2, b1, b2)
	}
}

func FuzzMD5Pair(f *testing.F) {
	f.Add([]byte("abc"), uint8(0), uint8(0), uint16(1))
	f.Add(bytes.Repeat([]byte{1, 2, 3}, 200), uint8(64), uint8(0), uint16(65))
	f.Add(bytes.Repeat([]byte{9}, 1000), uint8(5), uint8(69), uint16(300))
	f.Fuzz(func(t *testing.T, data []byte, p1, p2 uint8, cut uint16) {
		pre := bytes.Repeat([]byte{0x5a}, 255)
		checkPair(t, pre[:p1], data[:min(int(p2), len(data))], data, []int{int(cut)})
	})
}
