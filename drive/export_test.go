package drive

import "time"

// OnChecksumsYield makes the checksum pass call f each time it starts
// waiting for chunk bodies being received.
func OnChecksumsYield(d *Drive, f func()) { d.sumYield = f }

// SetChecksumsDefer sets how long the checksum pass waits for uploads per
// file (sumDefer).
func SetChecksumsDefer(d *Drive, t time.Duration) { d.sumDefer = t }

// SetChecksumsQuiet sets how long after the latest chunk body received the
// checksum pass waits (sumQuiet).
func SetChecksumsQuiet(d *Drive, t time.Duration) { d.sumQuiet = t }
