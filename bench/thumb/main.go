// Command thumb measures thumbnails of 12 MP photos:
//
//  1. in this process, the time to make a 256 px thumbnail of a 12 MP
//     (4000 × 3000) JPEG with package thumb (median of -runs), and the
//     bytes it allocates;
//  2. through a real `netdisk serve` (built from this checkout), -parallel
//     requests at once of GET /api/v1/thumb for as many different 12 MP
//     JPEGs (no thumbnail made yet), their wall time, and the daemon's
//     peak RSS (VmHWM) before and after them, then the same requests again
//     (served from the thumbnail folder).
//
// Run: go run ./bench/thumb [-runs 5 -parallel 8]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"netdisk/bench/internal/procstat"
	"netdisk/testutil"
	"netdisk/thumb"
)

// photo is a 4000 × 3000 JPEG with a photo's detail (gradients, shapes and
// noise), so its size and decode cost are a camera's, not a flat image's.
func photo(seed uint64) []byte {
	const w, h = 4000, 3000
	r := rand.New(rand.NewPCG(seed, 7))
	img := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	fx, fy := r.Float64()*0.01, r.Float64()*0.01
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := 128 + 60*math.Sin(float64(x)*fx+float64(y)*0.002) + 40*math.Cos(float64(y)*fy) + float64(r.IntN(24))
			img.Y[y*img.YStride+x] = uint8(max(0, min(255, v)))
		}
	}
	for i := range img.Cb {
		img.Cb[i] = uint8(100 + r.IntN(56))
		img.Cr[i] = uint8(110 + r.IntN(40))
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		log.Fatal(err)
	}
	return b.Bytes()
}

func main() {
	runs := flag.Int("runs", 5, "in-process thumbnails timed (the median is reported)")
	parallel := flag.Int("parallel", 8, "concurrent requests, each for a different photo")
	flag.Parse()
	log.SetFlags(0)
	ctx := context.Background()

	src := photo(1)
	m := thumb.New(thumb.Limits{})
	var times []time.Duration
	var alloc uint64
	for i := range *runs {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		t, err := m.Make(ctx, bytes.NewReader(src), int64(len(src)), 256)
		times = append(times, time.Since(start))
		runtime.ReadMemStats(&after)
		if err != nil || t.Width != 256 || t.Height != 192 {
			log.Fatalf("thumbnail %d: %dx%d, %v", i, t.Width, t.Height, err)
		}
		alloc = after.TotalAlloc - before.TotalAlloc
	}
	slices.Sort(times)
	fmt.Printf("thumbnail benchmark: 12 MP JPEG (4000 × 3000, %.1f MB)\n\n", float64(len(src))/1e6)
	fmt.Printf("%-58s %10.0f ms (min %.0f, max %.0f)\n", "256 px thumbnail, in process, median of "+strconv.Itoa(*runs),
		ms(times[len(times)/2]), ms(times[0]), ms(times[len(times)-1]))
	fmt.Printf("%-58s %10.1f MB\n", "allocated per thumbnail", float64(alloc)/1e6)

	dir, err := os.MkdirTemp("", "netdisk-bench-thumb-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin, err := testutil.BuildBinary(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	d, err := testutil.LaunchDaemon(ctx, testutil.DaemonConfig{Bin: bin, DataDir: filepath.Join(dir, "data"),
		AdminPass: "bench-pass", LogLevel: "warn", Args: []string{"--gc-interval", "0"}})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Stop()
	for i := range *parallel {
		body := src
		if i > 0 {
			body = photo(uint64(i + 1))
		}
		resp, err := d.Do(ctx, "PUT", fmt.Sprintf("/dav/p%d.jpg", i), "admin", "bench-pass", body, nil)
		if err != nil || resp.StatusCode != http.StatusCreated {
			log.Fatalf("PUT: %v %v", err, resp)
		}
		resp.Body.Close()
	}
	runtime.GC()
	base := vmHWM(d.Pid())
	all := func() time.Duration {
		var wg sync.WaitGroup
		start := time.Now()
		for i := range *parallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := d.Do(ctx, "GET", fmt.Sprintf("/api/v1/thumb?path=/p%d.jpg&size=256", i), "admin", "bench-pass", nil, nil)
				if err != nil {
					log.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					log.Fatalf("thumb %d: %d %s", i, resp.StatusCode, b)
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	made := all()
	peak := vmHWM(d.Pid())
	cached := all()
	fmt.Printf("%-58s %10.0f ms\n", fmt.Sprintf("%d parallel requests, different photos, made (wall)", *parallel), ms(made))
	fmt.Printf("%-58s %10.0f ms\n", fmt.Sprintf("the same %d again, from the thumbnail folder (wall)", *parallel), ms(cached))
	fmt.Printf("%-58s %10.0f MB\n", "daemon peak RSS (VmHWM) after the uploads", base/1e6)
	fmt.Printf("%-58s %10.0f MB\n", "daemon peak RSS (VmHWM) after the parallel thumbnails", peak/1e6)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// vmHWM is a process's peak resident set, in bytes.
func vmHWM(pid int) float64 {
	n, err := procstat.PeakRSS(pid)
	if err != nil {
		log.Fatal(err)
	}
	return float64(n)
}
