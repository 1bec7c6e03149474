package web

import (
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A drive name may hold characters that mean something else to the tools
// that unpack a zip on Windows: `..\..\evil.bat` is one name in the drive
// but a path leaving the target folder to Explorer, 7-Zip or PowerShell's
// Expand-Archive, `C:\x` names a drive, and `CON` or `a.txt.` cannot be
// created there at all. zipNames gives every entry a name that is one plain
// file or folder name on every system: reserved characters and controls
// become '_', trailing dots and spaces (which Windows drops) become '_',
// device names get a '_' before them; names that collide after that (or
// differ only in case, which Windows does not tell apart) get " (2)",
// " (3)"… before their extension.
type zipNames struct {
	mapped map[string]string // path below the folder → archive path
	taken  map[string]bool   // archive paths given, lower-cased
}

func newZipNames() *zipNames {
	return &zipNames{mapped: map[string]string{}, taken: map[string]bool{}}
}

// top maps the archive's top folder name.
func (z *zipNames) top(name string) string {
	full := windowsSafe(name)
	z.taken[strings.ToLower(full)] = true
	return full
}

// name returns the archive path of rel (a '/'-separated path below the
// folder) under top (already mapped by z.top). A folder's children land in
// the folder's mapped name.
func (z *zipNames) name(top, rel string) string {
	if m, ok := z.mapped[rel]; ok {
		return m
	}
	dir := top
	if parent := path.Dir(rel); parent != "." {
		dir = z.name(top, parent)
	}
	full := dir + "/" + windowsSafe(path.Base(rel))
	if z.taken[strings.ToLower(full)] {
		ext := path.Ext(full) // of the last element only
		stem := strings.TrimSuffix(full, ext)
		for i := 2; ; i++ {
			c := stem + " (" + strconv.Itoa(i) + ")" + ext
			if !z.taken[strings.ToLower(c)] {
				full = c
				break
			}
		}
	}
	z.taken[strings.ToLower(full)] = true
	z.mapped[rel] = full
	return full
}

// windowsSafe maps one name to one that every unzip tool extracts as that
// single name inside the target folder.
func windowsSafe(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r < 0x20 || r == 0x7f || r == utf8.RuneError:
			b.WriteByte('_')
		case strings.ContainsRune(`\/:*?"<>|`, r):
			b.WriteByte('_')
		default:
			b.WriteRune(r)
		}
	}
	s := b.String()
	// Windows drops trailing dots and spaces ("a.txt." is "a.txt", ".." is
	// the parent): keep the name's length, lose the meaning.
	trimmed := strings.TrimRight(s, ". ")
	s = trimmed + strings.Repeat("_", len(s)-len(trimmed))
	if s == "" {
		return "_"
	}
	if reservedDevice(s) {
		s = "_" + s
	}
	return s
}

// reservedDevice: CON, PRN, AUX, NUL, COM0-9 and LPT0-9 name devices on
// Windows, with any extension and in any case.
func reservedDevice(s string) bool {
	stem, _, _ := strings.Cut(s, ".")
	stem = strings.ToUpper(strings.TrimRight(stem, " "))
	switch stem {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	if len(stem) == 4 && (strings.HasPrefix(stem, "COM") || strings.HasPrefix(stem, "LPT")) {
		c := stem[3]
		return c >= '0' && c <= '9'
	}
	// COM¹, LPT² …: superscript digits count too.
	for _, p := range []string{"COM", "LPT"} {
		if rest, ok := strings.CutPrefix(stem, p); ok && (rest == "¹" || rest == "²" || rest == "³") {
			return true
		}
	}
	return false
}
