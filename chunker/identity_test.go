package chunker

import "testing"

// Pins the content identity: these values are part of the wire contract, and
// any client in any language must compute the same. Expected values were
// produced with coreutils md5sum, independently of this code.
func TestContentIdentityGolden(t *testing.T) {
	cases := []struct {
		name      string
		data      string
		chunkSize int
		chunks    []string
		file      string
	}{
		{"empty", "", 4, nil, "d41d8cd98f00b204e9800998ecf8427e"},
		{"one chunk", "abc", 4, []string{"900150983cd24fb0d6963f7d28e17f72"}, "ec0405c5aef93e771cd80e0db180b88b"},
		{"two chunks", "abcdefgh", 4, []string{"e2fc714c4727ee9395f324cd2e7f331f", "1f7690ebdd9b4caf8fab49ca1757bf27"}, "3c461f589cb433d96525f21b13081eae"},
	}
	for _, c := range cases {
		var got []string
		for off := 0; off < len(c.data); off += c.chunkSize {
			end := min(off+c.chunkSize, len(c.data))
			got = append(got, HashChunk([]byte(c.data[off:end])).MD5)
		}
		if len(got) != len(c.chunks) {
			t.Fatalf("%s: %d chunks, want %d", c.name, len(got), len(c.chunks))
		}
		for i := range got {
			if got[i] != c.chunks[i] {
				t.Errorf("%s: chunk %d = %s, want %s", c.name, i, got[i], c.chunks[i])
			}
		}
		if f := FileHash(got); f != c.file {
			t.Errorf("%s: file hash %s, want %s", c.name, f, c.file)
		}
	}
}

func TestChunkCountAndLen(t *testing.T) {
	for _, c := range []struct{ size, cs, n, last int64 }{
		{0, 4, 0, 0}, {1, 4, 1, 1}, {4, 4, 1, 4}, {5, 4, 2, 1}, {8, 4, 2, 4},
	} {
		if n := ChunkCount(c.size, c.cs); n != c.n {
			t.Errorf("ChunkCount(%d,%d)=%d want %d", c.size, c.cs, n, c.n)
		}
		if c.n > 0 {
			if l := ChunkLen(c.size, c.cs, c.n-1); l != c.last {
				t.Errorf("ChunkLen last (%d,%d)=%d want %d", c.size, c.cs, l, c.last)
			}
		}
	}
}
