// Package benchdata holds what the benchmarks make and measure alike: their
// pseudo-random input files and the median of their rounds.
package benchdata

import (
	"math/rand/v2"
	"os"
	"slices"
)

// WriteRandom writes n pseudo-random bytes (ChaCha8, fast) drawn from key to
// a new file p: incompressible, and the same for the same key.
func WriteRandom(p string, key [32]byte, n int64) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	r := rand.NewChaCha8(key)
	buf := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, int64(len(buf)))
		r.Read(buf[:k])
		if _, err := f.Write(buf[:k]); err != nil {
			f.Close()
			return err
		}
		n -= k
	}
	return f.Close()
}

// Median returns the median of xs (the mean of the middle two for an even
// count), leaving xs as it is.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
