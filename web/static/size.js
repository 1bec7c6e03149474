// fmtBytes writes a byte count for people: the page's one size formatter
// (the file list, the quota bar, the upload panel; search and gallery views
// import it too). It is the twin of Go's internal/bytesize, line for line, so
// the page, the CLI and the server's messages print a size alike: IEC units
// (KiB, MiB, GiB: the units of the --quota 10GiB flags), three significant
// digits at most, trailing zeros dropped, plain bytes under 1 KiB. Both are
// tested against testdata/bytesize.json.
const UNITS = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];

// round3 rounds v (≥ 1) to three significant digits with floor(x + 0.5), as
// the Go twin does: Number.toFixed rounds ties otherwise.
function round3(v) {
  if (v < 10) return Math.floor(v * 100 + 0.5) / 100;
  if (v < 100) return Math.floor(v * 10 + 0.5) / 10;
  return Math.floor(v + 0.5);
}

export function fmtBytes(n) {
  n = Math.round(n); // a speed in bytes per second is no whole count
  if (n < 0) return '-' + fmtBytes(-n);
  if (n < 1024) return n + ' B';
  let v = n, i = -1;
  do { v /= 1024; i++; } while (v >= 1024 && i < UNITS.length - 1);
  let r = round3(v);
  // 1023.9 KiB rounds to 1024 KiB: that is 1 MiB.
  if (r >= 1024 && i < UNITS.length - 1) { i++; r = round3(r / 1024); }
  return String(r) + ' ' + UNITS[i];
}
