package web_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"netdisk/testutil"
	"netdisk/web/browsertest"
)

// landscape draws a w × h picture: a sky from top to horizon, a sun, and
// two hills, in the colours of pal (sky top, sky bottom, sun, far hill,
// near hill), so screenshots show recognisable pictures.
func landscape(w, h int, pal [5]color.RGBA) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	mix := func(a, b color.RGBA, t float64) color.RGBA {
		f := func(x, y uint8) uint8 { return uint8(float64(x)*(1-t) + float64(y)*t) }
		return color.RGBA{f(a.R, b.R), f(a.G, b.G), f(a.B, b.B), 255}
	}
	sx, sy, sr := float64(w)*0.68, float64(h)*0.42, float64(h)*0.13
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x), float64(y)
			c := mix(pal[0], pal[1], fy/float64(h))
			if math.Hypot(fx-sx, fy-sy) < sr {
				c = pal[2]
			}
			if fy > float64(h)*(0.58+0.08*math.Sin(fx/float64(w)*5)) {
				c = pal[3]
			}
			if fy > float64(h)*(0.74+0.06*math.Cos(fx/float64(w)*7+1)) {
				c = pal[4]
			}
			img.SetRGBA(x, y, c)
		}
	}
	return img
}

func encodeJPEG(t *testing.T, img image.Image) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 88}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestBrowserGallery: images uploaded through the page show decoded
// thumbnails (from /api/v1/thumb, under the page's CSP) in the list and in
// the gallery; what has none (a decompression bomb, a text file, a folder)
// keeps its icon; a tile opens the image in the preview.
func TestBrowserGallery(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	shots := shooter{t: t, b: b, dir: os.Getenv("NETDISK_SCREENSHOTS")}
	tmp := t.TempDir()
	sunset := [5]color.RGBA{{255, 150, 90, 255}, {255, 214, 150, 255}, {255, 244, 214, 255}, {150, 88, 110, 255}, {82, 52, 78, 255}}
	meadow := [5]color.RGBA{{98, 170, 240, 255}, {200, 230, 250, 255}, {255, 238, 140, 255}, {120, 180, 90, 255}, {60, 130, 70, 255}}
	night := [5]color.RGBA{{16, 24, 64, 255}, {58, 70, 130, 255}, {236, 236, 220, 255}, {38, 48, 82, 255}, {18, 24, 44, 255}}
	var gifBuf bytes.Buffer
	pal := landscape(320, 240, night)
	pm := image.NewPaletted(pal.Bounds(), []color.Color{night[0], night[1], night[2], night[3], night[4]})
	for y := 0; y < 240; y++ {
		for x := 0; x < 320; x++ {
			pm.Set(x, y, pal.At(x, y))
		}
	}
	if err := gif.Encode(&gifBuf, pm, nil); err != nil {
		t.Fatal(err)
	}
	files := []string{
		writeFile(t, tmp, "sunset.jpg", encodeJPEG(t, landscape(1600, 1066, sunset))),
		writeFile(t, tmp, "meadow.png", pngOf(t, landscape(900, 1200, meadow))),
		writeFile(t, tmp, "night.gif", gifBuf.Bytes()),
		writeFile(t, tmp, "bomb.png", testutil.PNGBomb(60000, 60000)),
		writeFile(t, tmp, "notes.txt", []byte("not a picture\n")),
	}
	b.SignIn(t, d.URL, "admin", d.AdminPass)

	// A WebP made by the browser itself (Go has no WebP encoder), stored
	// over WebDAV.
	var webpURL string
	b.Run(t, "encode a webp", 20*time.Second, chromedp.Evaluate(`(() => {
		const c = document.createElement('canvas'); c.width = 640; c.height = 480;
		const g = c.getContext('2d');
		const sky = g.createLinearGradient(0, 0, 0, 480); sky.addColorStop(0, '#78c4e6'); sky.addColorStop(1, '#ece2c8');
		g.fillStyle = sky; g.fillRect(0, 0, 640, 480);
		g.fillStyle = '#fff6d0'; g.beginPath(); g.arc(180, 150, 54, 0, 7); g.fill();
		g.fillStyle = '#2f7d6b'; g.beginPath(); g.moveTo(0, 480); g.lineTo(0, 330); g.quadraticCurveTo(320, 230, 640, 340); g.lineTo(640, 480); g.fill();
		return c.toDataURL('image/webp', 0.9);
	})()`, &webpURL))
	webp, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(webpURL, "data:image/webp;base64,"))
	if err != nil || !bytes.HasPrefix(webp, []byte("RIFF")) {
		t.Fatalf("chromium's webp: %v, %q", err, webpURL[:min(40, len(webpURL))])
	}
	resp, err := d.Do(context.Background(), "PUT", "/dav/lagoon.webp", "admin", d.AdminPass, webp, nil)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT lagoon.webp: %v %v", err, resp)
	}
	resp.Body.Close()
	b.Run(t, "create a folder", 20*time.Second,
		chromedp.Click("#btn-mkdir", chromedp.ByQuery),
		answerDialog("Albums"),
		chromedp.WaitVisible(`tr[data-path="/Albums"]`, chromedp.ByQuery),
	)
	b.Run(t, "pick files", 20*time.Second, chromedp.SetUploadFiles("#pick-files", files, chromedp.ByQuery))
	for _, p := range []string{"/sunset.jpg", "/meadow.png", "/night.gif", "/bomb.png", "/notes.txt"} {
		if row := b.WaitUpload(t, p, 60*time.Second, "done", "error"); row.State != "done" {
			t.Fatalf("upload %s: %+v", p, row)
		}
	}
	images := []string{"/sunset.jpg", "/meadow.png", "/night.gif", "/lagoon.webp"}
	decoded := func(sel string) string {
		var q []string
		for _, p := range images {
			q = append(q, fmt.Sprintf(`(() => { const i = document.querySelector('%s[data-path="%s"] .thumb img'); return i && i.complete && i.naturalWidth > 0 && i.parentElement.classList.contains('has-img'); })()`, sel, p))
		}
		return strings.Join(q, " && ")
	}
	// The upload panel refreshes the listing once the files are in.
	b.Run(t, "thumbnails in the list", 30*time.Second,
		chromedp.WaitVisible(`tr[data-path="/notes.txt"]`, chromedp.ByQuery),
		chromedp.Poll(decoded("tr"), nil, chromedp.WithPollingTimeout(25*time.Second)),
	)
	var srcs []string
	var iconsKept bool
	b.Run(t, "what has no thumbnail keeps its icon", 20*time.Second,
		chromedp.Poll(`(() => { const i = document.querySelector('tr[data-path="/bomb.png"] img'); return !i; })()`, nil),
		chromedp.Evaluate(`['/bomb.png', '/notes.txt', '/Albums'].every(p => document.querySelector('tr[data-path="' + p + '"] .name svg'))`, &iconsKept),
		chromedp.Evaluate(`[...document.querySelectorAll('#rows .thumb img')].map(i => i.getAttribute('src') + ' ' + i.loading)`, &srcs),
	)
	if !iconsKept {
		t.Fatal("the bomb, the text file or the folder lost its icon")
	}
	for _, s := range srcs {
		if !strings.HasPrefix(s, "/api/v1/thumb?path=") || !strings.Contains(s, "&v=") || !strings.HasSuffix(s, " lazy") {
			t.Errorf("list thumbnail %q: want a lazy same-origin /api/v1/thumb URL with the version", s)
		}
	}

	b.Run(t, "the gallery", 30*time.Second,
		chromedp.Click("#btn-view", chromedp.ByQuery),
		chromedp.WaitVisible(`#gallery .tile[data-path="/sunset.jpg"]`, chromedp.ByQuery),
		chromedp.WaitNotVisible(`#files`, chromedp.ByQuery),
		chromedp.Poll(decoded("#gallery .tile"), nil, chromedp.WithPollingTimeout(25*time.Second)),
	)
	var natural int
	b.Run(t, "gallery thumbnails are the 256 size", 10*time.Second,
		chromedp.Evaluate(`document.querySelector('#gallery .tile[data-path="/sunset.jpg"] img').naturalWidth`, &natural))
	if natural != 256 {
		t.Errorf("gallery thumbnail of sunset.jpg is %d px wide, want 256", natural)
	}
	b.Run(t, "clear the upload panel", 10*time.Second, chromedp.Click("#uploads-clear", chromedp.ByQuery), chromedp.WaitNotVisible("#uploads", chromedp.ByQuery))
	shots.both("gallery")

	b.Run(t, "a tile opens the preview", 20*time.Second,
		chromedp.Click(`#gallery .tile[data-path="/meadow.png"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#preview-body img`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('#preview-body img').naturalWidth === 900`, nil),
		chromedp.Click("#preview-close", chromedp.ByQuery),
		chromedp.WaitNotVisible("#preview", chromedp.ByQuery),
	)
	// The choice stays across a reload; the toggle goes back to the list.
	b.Run(t, "reload keeps the gallery", 30*time.Second,
		chromedp.Reload(),
		chromedp.WaitVisible(`#gallery .tile[data-path="/night.gif"]`, chromedp.ByQuery),
		chromedp.Click("#btn-view", chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-path="/night.gif"]`, chromedp.ByQuery),
		chromedp.WaitNotVisible(`#gallery`, chromedp.ByQuery),
	)
}

func pngOf(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
