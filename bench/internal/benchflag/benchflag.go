// Package benchflag holds the command-line flag types the benchmarks share.
package benchflag

import (
	"flag"

	"github.com/dustin/go-humanize"
)

// bytesValue is a size flag: "4MiB", "1GiB", "100MB", "0".
type bytesValue uint64

func (b *bytesValue) String() string { return humanize.IBytes(uint64(*b)) }

func (b *bytesValue) Set(s string) error {
	n, err := humanize.ParseBytes(s)
	*b = bytesValue(n)
	return err
}

// Bytes defines a size flag on the default flag set, parsed with
// humanize.ParseBytes, and returns where its value is kept.
func Bytes(name string, value uint64, usage string) *uint64 {
	p := new(uint64)
	*p = value
	flag.Var((*bytesValue)(p), name, usage)
	return p
}
