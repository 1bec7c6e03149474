package web_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"netdisk/testutil"
	"netdisk/web/browsertest"
)

// TestBrowserLargeFolder: a folder of a few thousand entries is read a page
// at a time and shown from the first page; the page holds rows only near
// the view, far fewer than the folder, and scrolling to the end shows the
// last name; select-all and the arrow keys still reach every entry.
func TestBrowserLargeFolder(t *testing.T) {
	const n = 1500
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t)
	mkcol := func(p string) error {
		resp, err := d.Do(context.Background(), "MKCOL", "/dav"+p, "admin", d.AdminPass, nil, nil)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 201 {
			return fmt.Errorf("MKCOL %s: %d", p, resp.StatusCode)
		}
		return nil
	}
	if err := mkcol("/big"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				if err := mkcol(fmt.Sprintf("/big/d-%04d", i)); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	b.SignIn(t, d.URL, "admin", d.AdminPass)
	var got struct {
		Entries, Rows int
		First         string
	}
	b.Run(t, "open the folder", 30*time.Second,
		chromedp.WaitVisible(`tr[data-path="/big"]`, chromedp.ByQuery),
		chromedp.Evaluate(`import('/static/app.js').then(async m => { await m.go('/big');
			const rows = document.querySelectorAll('#rows tr');
			return { Entries: m.state.entries.length, Rows: rows.length, First: rows[0].dataset.name }; })`, &got, awaitPromise))
	if got.Entries != n || got.Rows == 0 || got.Rows > n/4 || got.First != "d-0000" {
		t.Fatalf("after opening: %+v; want %d entries read, rows for a few screens only, d-0000 first", got, n)
	}
	var last struct {
		Name  string
		Rows  int
		Steps int
	}
	b.Run(t, "scroll to the end", 30*time.Second, chromedp.Evaluate(`(async () => {
		let steps = 0;
		for (; steps < 200; steps++) {
			const rows = document.querySelectorAll('#rows tr');
			if (rows[rows.length - 1].dataset.name === 'd-`+fmt.Sprintf("%04d", n-1)+`') break;
			window.scrollTo(0, document.documentElement.scrollHeight);
			await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
		}
		const rows = document.querySelectorAll('#rows tr');
		return { Name: rows[rows.length - 1].dataset.name, Rows: rows.length, Steps: steps };
	})()`, &last, awaitPromise))
	if last.Name != fmt.Sprintf("d-%04d", n-1) || last.Steps < 2 {
		t.Fatalf("at the end: %+v; want the last name after scrolling more than once", last)
	}
	var count string
	var focused string
	b.Run(t, "select all, arrows", 20*time.Second,
		chromedp.Click(`#check-all`, chromedp.ByQuery),
		chromedp.Text(`#sel-count`, &count, chromedp.ByQuery),
		chromedp.Evaluate(`(() => { const rows = document.querySelectorAll('#rows tr'); rows[rows.length - 1].focus();
			document.activeElement.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown', bubbles: true }));
			return document.activeElement.dataset.name; })()`, &focused))
	if count != fmt.Sprintf("%d selected", n) {
		t.Errorf("select all: %q, want %d selected", count, n)
	}
	if focused != "d-0000" {
		t.Errorf("ArrowDown on the last row focuses %q, want the first again", focused)
	}
}
