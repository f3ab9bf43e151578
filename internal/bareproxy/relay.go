package bareproxy

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// hopHeaders are the hop-by-hop headers of RFC 9110 section 7.6.1 that the
// relay does not pass on, in either direction.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// NewRelay returns a floor below New: a handler that reads the request
// body whole, sends it with the same pooled transport's RoundTrip, and
// copies the answer as it comes, flushing after every read. It does what
// httputil.ReverseProxy does for a POST to one upstream but no more: no
// X-Forwarded-For, no flush timer (ReverseProxy flushes an event stream's
// headers from a timer of its own, a write to the client more), no
// protocol upgrades.
func NewRelay(upstream *url.URL) http.Handler {
	tr := pooled()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !readBody(w, r) {
			return
		}
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.URL.Scheme, out.URL.Host, out.Host = upstream.Scheme, upstream.Host, ""
		out.URL.Path = strings.TrimSuffix(upstream.Path, "/") + r.URL.Path
		dropHop(out.Header)
		resp, err := tr.RoundTrip(out)
		if err != nil {
			http.Error(w, "upstream: "+err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		h := w.Header()
		for k, v := range resp.Header {
			h[k] = v
		}
		dropHop(h)
		w.WriteHeader(resp.StatusCode)
		copyFlushing(w, resp.Body)
	})
}

// copyFlushing copies body to w, flushing after every read, until either
// ends.
func copyFlushing(w http.ResponseWriter, body io.Reader) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if ferr := rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func dropHop(h http.Header) {
	for _, k := range hopHeaders {
		h.Del(k)
	}
}
