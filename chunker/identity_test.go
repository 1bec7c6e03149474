package chunker

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"netdisk/testutil"
)

// TestContentIdentityGolden pins the content identity to the shared vectors
// of testdata/identity: these values are part of the wire contract, and any
// client in any language must compute the same. The vectors were produced
// with coreutils md5sum; the chunker must agree with them, cutting with
// ChunkCount/ChunkLen and hashing with HashChunk (and ChunkHasher), FileHash and FileHasher.
func TestContentIdentityGolden(t *testing.T) {
	for _, v := range testutil.IdentityVectors(t) {
		data := v.Data()
		n := ChunkCount(int64(len(data)), v.ChunkSize)
		if n != int64(len(v.Chunks)) {
			t.Fatalf("%s: ChunkCount %d, want %d", v.Name, n, len(v.Chunks))
		}
		var got []string
		fh := NewFileHasher()
		for i := range n {
			off := i * v.ChunkSize
			c := data[off : off+ChunkLen(int64(len(data)), v.ChunkSize, i)]
			s := HashChunk(c)
			if s.MD5 != ChunkMD5(c) || s.Size != int64(len(c)) {
				t.Errorf("%s: chunk %d: HashChunk %+v, ChunkMD5 %s", v.Name, i, s, ChunkMD5(c))
			}
			// Fed in uneven pieces, as a body arrives, ChunkHasher agrees.
			h := NewChunkHasher()
			for p, k := c, 1; len(p) > 0; k = k*3 + 1 {
				h.Write(p[:min(k, len(p))])
				p = p[min(k, len(p)):]
			}
			if hs := h.Sum(); hs != s {
				t.Errorf("%s: chunk %d: ChunkHasher %+v, HashChunk %+v", v.Name, i, hs, s)
			}
			got = append(got, s.MD5)
			fh.Add(s.MD5)
		}
		if !slices.Equal(got, v.Chunks) {
			t.Errorf("%s: chunks %v, want %v", v.Name, got, v.Chunks)
		}
		if f, g := FileHash(got), fh.Sum(); f != v.FileHash || g != v.FileHash {
			t.Errorf("%s: FileHash %s, FileHasher %s, want %s", v.Name, f, g, v.FileHash)
		}
	}
}

// TestIdentityVectorsAgreeWithMD5sum recomputes every vector with coreutils
// md5sum, so the golden values cannot drift with the code they check.
func TestIdentityVectorsAgreeWithMD5sum(t *testing.T) {
	md5sum := testutil.RequireTool(t, "md5sum")
	run := func(b []byte) string {
		t.Helper()
		cmd := exec.Command(md5sum)
		cmd.Stdin = bytes.NewReader(b)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("md5sum: %v", err)
		}
		return strings.Fields(string(out))[0]
	}
	for _, v := range testutil.IdentityVectors(t) {
		data := v.Data()
		var hexes []string
		for off := 0; off < len(data); off += int(v.ChunkSize) {
			hexes = append(hexes, run(data[off:min(off+int(v.ChunkSize), len(data))]))
		}
		if !slices.Equal(hexes, v.Chunks) {
			t.Errorf("%s: md5sum of the chunks %v, vectors.json says %v", v.Name, hexes, v.Chunks)
		}
		if f := run([]byte(strings.Join(hexes, ""))); f != v.FileHash {
			t.Errorf("%s: md5sum of the concatenated hex MD5s %s, vectors.json says %s", v.Name, f, v.FileHash)
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

// TestValidHashes: a hash is accepted only as the protocol writes it,
// lowercase hex of its exact length; dedup's keys are checked by
// ValidSHA256 too, so one that could name a path outside the store never
// passes.
func TestValidHashes(t *testing.T) {
	md5s, sha := strings.Repeat("0123456789abcdef", 2), strings.Repeat("0123456789abcdef", 4)
	for _, c := range []struct {
		h            string
		hash, sha256 bool
	}{
		{md5s, true, false},
		{sha, false, true},
		{"", false, false},
		{md5s[:31], false, false},
		{md5s + "0", false, false},
		{strings.ToUpper(md5s), false, false},
		{strings.ToUpper(sha), false, false},
		{md5s[:31] + "g", false, false},
		{sha[:62] + "/.", false, false},
		{md5s[:30] + "é", false, false},
	} {
		if got := ValidHash(c.h); got != c.hash {
			t.Errorf("ValidHash(%q) = %v", c.h, got)
		}
		if got := ValidSHA256(c.h); got != c.sha256 {
			t.Errorf("ValidSHA256(%q) = %v", c.h, got)
		}
	}
}
