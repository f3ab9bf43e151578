// Package bareproxy is the floor the benchmarks measure airouter against:
// a bare httputil.ReverseProxy (New), pooled as airouter's transport is and
// reading a request body whole before forwarding it, as airouter does, and
// a floor below it that relays with the transport alone (NewRelay).
// Streaming the body through instead would let net/http close it under
// the upstream request once the answer's headers are out, which cuts
// streams.
package bareproxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

// New returns the bare reverse proxy to upstream. It flushes every write
// (what ReverseProxy does for an event stream anyway) and keeps up to 256
// idle connections to the upstream: the default transport keeps 2, which
// would measure connection churn instead of proxying.
func New(upstream *url.URL) http.Handler {
	rp := httputil.NewSingleHostReverseProxy(upstream)
	rp.Transport = pooled()
	rp.FlushInterval = -1
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if readBody(w, r) {
			rp.ServeHTTP(w, r)
		}
	})
}

// pooled is the floors' transport to the upstream.
func pooled() *http.Transport {
	return &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 256, IdleConnTimeout: 120 * time.Second,
		DisableCompression: true, ForceAttemptHTTP2: true}
}

// readBody reads r's body whole and puts it back as bytes in memory; on a
// failed read it answers 400 and reports false.
func readBody(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read the request body: "+err.Error(), http.StatusBadRequest)
		return false
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return true
}
