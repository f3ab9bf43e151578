package bareproxy

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// hopHeaders are the hop-by-hop headers of RFC 9110 section 7.6.1 that the
// relay does not pass on, in either direction.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// copyBuffer is the size of the relay's reads of an answer.
const copyBuffer = 32 << 10

// NewRelay returns a floor below New: a handler that reads the request
// body whole, sends it to upstream (its path joined before the request's,
// the two queries joined, Host the upstream's) with the same pooled
// transport's RoundTrip, and copies the answer as it comes, flushing after
// every read, from buffers it reuses as airouter does. It leaves out what
// httputil.ReverseProxy adds: X-Forwarded-For, the headers a Connection
// header names, protocol upgrades, and the flush timer through which
// ReverseProxy writes every answer's headers on their own. A stream the
// upstream cuts is cut for the client too (http.ErrAbortHandler), as
// ReverseProxy does.
func NewRelay(upstream *url.URL) http.Handler {
	tr := pooled()
	bufs := sync.Pool{New: func() any { b := make([]byte, copyBuffer); return &b }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !readBody(w, r) {
			return
		}
		resp, err := tr.RoundTrip(outbound(r, upstream))
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
		bp := bufs.Get().(*[]byte)
		defer bufs.Put(bp)
		if err := copyFlushing(w, resp.Body, *bp); errors.Is(err, errUpstreamCut) {
			panic(http.ErrAbortHandler)
		}
	})
}

// outbound is r as sent to upstream.
func outbound(r *http.Request, upstream *url.URL) *http.Request {
	out := r.Clone(r.Context())
	out.RequestURI, out.Host, out.Close = "", "", false
	out.URL.Scheme, out.URL.Host = upstream.Scheme, upstream.Host
	out.URL.Path, out.URL.RawPath = strings.TrimSuffix(upstream.Path, "/")+r.URL.Path, ""
	switch {
	case upstream.RawQuery == "":
	case r.URL.RawQuery == "":
		out.URL.RawQuery = upstream.RawQuery
	default:
		out.URL.RawQuery = upstream.RawQuery + "&" + r.URL.RawQuery
	}
	dropHop(out.Header)
	return out
}

var errUpstreamCut = errors.New("the upstream's answer was cut")

// copyFlushing copies body to w through buf, flushing after every read.
// It returns errUpstreamCut when reading body failed, nil when it ended or
// the client went away.
func copyFlushing(w http.ResponseWriter, body io.Reader, buf []byte) error {
	rc := http.NewResponseController(w)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil
			}
			if ferr := rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
				return nil
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return errUpstreamCut
		}
	}
}

func dropHop(h http.Header) {
	for _, k := range hopHeaders {
		h.Del(k)
	}
}
