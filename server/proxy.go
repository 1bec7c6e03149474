package server

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Forwarded headers. A reverse proxy in front of the daemon (TLS, a
// balancer) names the client in X-Forwarded-For and the scheme it was
// reached by in X-Forwarded-Proto. Anyone can send those headers, so they
// are believed only from the peers given as trusted (serve
// --trusted-proxies): from one of those, the request's client address
// becomes the one X-Forwarded-For names (login throttling, logs) and
// X-Forwarded-Proto says whether the client used TLS (the web cookie's
// Secure flag); from any other peer both headers are removed before
// anything reads them.

// ParseTrustedProxies parses "CIDR,…" (a bare address is one host).
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: not an address or CIDR", f)
			}
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: not an address or CIDR", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

type trustedProxies []netip.Prefix

func (tp trustedProxies) trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range tp {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseHostAddr reads an address as X-Forwarded-For or RemoteAddr carry it:
// bare, with a port, or bracketed.
func parseHostAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// client is the address X-Forwarded-For names: walking from the right (the
// entry the nearest proxy added), the first that is not itself a trusted
// proxy; entries further left were written by whoever sent the request and
// prove nothing. ok is false when no entry is usable.
func (tp trustedProxies) client(xff []string) (netip.Addr, bool) {
	var entries []string
	for _, h := range xff {
		entries = append(entries, strings.Split(h, ",")...)
	}
	var found netip.Addr
	for i := len(entries) - 1; i >= 0; i-- {
		a, ok := parseHostAddr(entries[i])
		if !ok {
			break
		}
		found = a
		if !tp.trusted(a) {
			break
		}
	}
	return found, found.IsValid()
}

// forwarded applies the forwarded headers of trusted peers to the request,
// and removes them from everyone else's.
func (tp trustedProxies) forwarded(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer, ok := parseHostAddr(r.RemoteAddr)
		if !ok || !tp.trusted(peer) {
			r.Header.Del("X-Forwarded-For")
			r.Header.Del("X-Forwarded-Proto")
			h.ServeHTTP(w, r)
			return
		}
		if c, ok := tp.client(r.Header.Values("X-Forwarded-For")); ok {
			r.RemoteAddr = net.JoinHostPort(c.String(), "0")
		}
		if vs := r.Header.Values("X-Forwarded-Proto"); len(vs) > 0 {
			// The nearest proxy's word (the last), as one value.
			protos := strings.Split(vs[len(vs)-1], ",")
			r.Header.Set("X-Forwarded-Proto", strings.TrimSpace(protos[len(protos)-1]))
		}
		h.ServeHTTP(w, r)
	})
}
