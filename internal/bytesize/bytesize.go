// Package bytesize writes a byte count for people, the one way netdisk
// prints sizes everywhere: the CLI's outputs, error messages (quota) and, by
// a line-for-line twin in web/static/size.js, the web page.
//
// The units are IEC (KiB, MiB, GiB: powers of 1024), the same the flags
// take (--quota 10GiB, --chunk-size 4MiB) and the ones files are cut in, so
// a quota of 10GiB prints as "10 GiB", never "10.7 GB". Three significant
// digits at most ("1.5 MiB", "26.7 MiB", "210 MiB"), trailing zeros dropped
// ("1 KiB"), plain bytes under 1 KiB ("1023 B"). The rounding is written out
// (round half up on v·10^d) rather than left to a formatting verb, so the Go
// and the JavaScript twin print the same text for every count.
//
// It is not a parser: flags are read by humanize.ParseBytes, which reads
// what this writes.
package bytesize

import (
	"math"
	"strconv"
)

var units = [...]string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// Format writes n bytes for people, e.g. "0 B", "1023 B", "1 KiB",
// "1.5 MiB", "10 GiB". A negative n (a difference) keeps its sign.
func Format(n int64) string {
	if n < 0 {
		return "-" + formatU(uint64(-(n+1))+1)
	}
	return formatU(uint64(n))
}

func formatU(n uint64) string {
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	v := float64(n)
	i := -1
	for {
		v /= 1024
		i++
		if v < 1024 || i == len(units)-1 {
			break
		}
	}
	r := round3(v)
	// 1023.9 KiB rounds to 1024 KiB: that is 1 MiB.
	if r >= 1024 && i < len(units)-1 {
		i++
		r = round3(r / 1024)
	}
	return strconv.FormatFloat(r, 'f', -1, 64) + " " + units[i]
}

// round3 rounds v (≥ 1) to three significant digits: two decimals under 10,
// one under 100, none above.
func round3(v float64) float64 {
	switch {
	case v < 10:
		return math.Floor(v*100+0.5) / 100
	case v < 100:
		return math.Floor(v*10+0.5) / 10
	}
	return math.Floor(v + 0.5)
}
