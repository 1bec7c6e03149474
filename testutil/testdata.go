package testutil

import (
	"bytes"
	"crypto/md5"
	cryptorand "crypto/rand"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The repository's testdata/ holds the fixtures every package's tests share
// (testdata/README.md): content-identity vectors, an MD5 collision pair,
// hostile XML bodies and odd file names. These functions read them, so no
// test builds its own copy.

// Testdata returns the path of a file below the repository's testdata/.
func Testdata(elem ...string) string {
	return filepath.Join(append([]string{RepoRoot(), "testdata"}, elem...)...)
}

func readTestdata(t testing.TB, elem ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(Testdata(elem...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// IdentityVector is one golden content-identity vector
// (testdata/identity/vectors.json): an input, the chunk size it is cut at,
// its chunks' MD5s and its file hash, as coreutils md5sum computes them.
type IdentityVector struct {
	Name      string   `json:"name"`
	Text      *string  `json:"text"`    // the input as UTF-8 text, or
	Input     string   `json:"input"`   // a file below testdata/identity, or
	Pattern   int64    `json:"pattern"` // this many bytes, byte i being i mod 251
	ChunkSize int64    `json:"chunkSize"`
	Chunks    []string `json:"chunks"`
	FileHash  string   `json:"file"`
	data      []byte
}

// Data returns the vector's input bytes.
func (v IdentityVector) Data() []byte { return v.data }

// IdentityVectors returns the golden content-identity vectors with their
// inputs loaded.
func IdentityVectors(t testing.TB) []IdentityVector {
	t.Helper()
	var doc struct {
		Vectors []IdentityVector `json:"vectors"`
	}
	if err := json.Unmarshal(readTestdata(t, "identity", "vectors.json"), &doc); err != nil {
		t.Fatalf("testdata/identity/vectors.json: %v", err)
	}
	for i := range doc.Vectors {
		v := &doc.Vectors[i]
		switch {
		case v.Text != nil:
			v.data = []byte(*v.Text)
		case v.Input != "":
			v.data = readTestdata(t, "identity", v.Input)
		default:
			v.data = make([]byte, v.Pattern)
			for j := range v.data {
				v.data[j] = byte(j % 251)
			}
		}
	}
	return doc.Vectors
}

// MD5Collision returns the two inputs of testdata/md5collision: different
// bytes, the same MD5. It checks both facts first.
func MD5Collision(t testing.TB) (a, b []byte) {
	t.Helper()
	a, b = readTestdata(t, "md5collision", "a.bin"), readTestdata(t, "md5collision", "b.bin")
	if bytes.Equal(a, b) || len(a) != len(b) || md5.Sum(a) != md5.Sum(b) {
		t.Fatal("testdata/md5collision is not an MD5 collision pair")
	}
	return a, b
}

// MD5CollidingContents returns A = a‖S and B = b‖S for the pair (a, b) of
// testdata/md5collision and S of n random bytes. MD5 runs over 64-byte
// blocks from a fixed state, and the pair's 128 bytes leave that state
// equal, so whatever follows collides too: cut at any chunk size of 128
// bytes or more, A's and B's first chunks differ in bytes but not in MD5,
// and their other chunks are the same. A and B have the same size, chunk
// MD5s and file hash, and different SHA-256s.
func MD5CollidingContents(t testing.TB, n int) (A, B []byte) {
	t.Helper()
	a, b := MD5Collision(t)
	s := make([]byte, n)
	cryptorand.Read(s)
	A, B = append(append([]byte{}, a...), s...), append(append([]byte{}, b...), s...)
	if md5.Sum(A) != md5.Sum(B) || bytes.Equal(A, B) {
		t.Fatal("a‖S and b‖S do not collide")
	}
	return A, B
}

// HostileXML returns the hostile request bodies of testdata/xml by file name
// (deep nesting, external entities, entity expansion, huge attribute and
// namespace counts). A server must answer each quickly, never expanding an
// entity or reading a file.
func HostileXML(t testing.TB) map[string][]byte { return xmlDir(t, "xml") }

// InvalidXML returns the bodies of testdata/xml/invalid by file name:
// malformed or not a valid PROPFIND/PROPPATCH, each answered 400.
func InvalidXML(t testing.TB) map[string][]byte { return xmlDir(t, "xml", "invalid") }

func xmlDir(t testing.TB, elem ...string) map[string][]byte {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(Testdata(elem...), "*.xml"))
	if err != nil || len(ms) == 0 {
		t.Fatalf("no XML bodies in testdata/%s: %v", strings.Join(elem, "/"), err)
	}
	out := map[string][]byte{}
	for _, m := range ms {
		out[filepath.Base(m)] = readTestdata(t, append(elem, filepath.Base(m))...)
	}
	return out
}

// OddNames returns the file names of testdata/names.txt: unicode, spaces,
// characters URLs and XML reserve, a 255-byte name and the like. Every
// name is valid in a drive and on Linux.
func OddNames(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(string(readTestdata(t, "names.txt")), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return out
}

// RandomBytes returns n pseudo-random bytes, the same for the same seed.
func RandomBytes(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// ByteSize is one case of testdata/bytesize.json: a byte count and the text
// people are shown for it, by internal/bytesize and by the web page alike.
type ByteSize struct {
	N    int64  `json:"n"`
	Text string `json:"text"`
}

// ByteSizes returns the size-formatting cases.
func ByteSizes(t testing.TB) []ByteSize {
	t.Helper()
	var cases []ByteSize
	if err := json.Unmarshal(readTestdata(t, "bytesize.json"), &cases); err != nil {
		t.Fatalf("testdata/bytesize.json: %v", err)
	}
	return cases
}
