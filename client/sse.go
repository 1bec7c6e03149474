package client

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// sseReader reads one Server-Sent Events response: the lock event stream
// and the agents' work stream share how a stream is opened and split into
// events.
type sseReader struct {
	body io.ReadCloser
	r    *bufio.Reader
}

// openSSE GETs path with q as an event stream; what names the stream in
// the error when the answer is not one.
func (c *Client) openSSE(ctx context.Context, path string, q url.Values, what string) (sseReader, error) {
	req, err := c.NewRequest(ctx, http.MethodGet, path, q, nil)
	if err != nil {
		return sseReader{}, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		return sseReader{}, err
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		return sseReader{}, fmt.Errorf("%s: unexpected content type %q", what, ct)
	}
	return sseReader{body: resp.Body, r: bufio.NewReader(resp.Body)}, nil
}

// next returns the next event's name and data. A block with no data (a
// retry field or a keep-alive comment only) is passed over; an error
// (io.EOF included) means the stream ended.
func (s sseReader) next() (name, data string, err error) {
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return "", "", err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if data == "" {
				name = ""
				continue
			}
			return name, data, nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data += strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
		}
	}
}

// Close ends the stream.
func (s sseReader) Close() error { return s.body.Close() }
