package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/internal/testkit"
)

// BenchmarkStreamSideBySide streams the same answers in lockstep (the
// upstream sends a chunk once the client has read the previous one)
// straight from an upstream, through a bare httputil.ReverseProxy and
// through the proxy (as benchAirouter builds it), one stream each in turn,
// all in this process. What a proxy costs is the process's CPU (getrusage)
// over the direct fetch's, so the client's and the upstream's share cancel
// out; us/stream is that for a stream of sideChunks chunks, us/chunk the
// slope between a long and a one-chunk answer. The two proxies take turns
// going first, since whichever runs second finds less of its memory in
// the cache. Pinned to one CPU (one processor, as in airbench -pin):
//
//	go test -c -o /tmp/proxy.test ./transport/proxy
//	taskset -c 0 /tmp/proxy.test -test.run '^$' -test.bench StreamSideBySide -test.benchtime 6000x -test.cpu 1 -test.cpuprofile /tmp/side.prof
//
// getrusage charges a target with whatever the process did in its turn,
// such as a collection the previous target's garbage started. So every
// target has an upstream and a client of its own, and every goroutine of a
// target carries the profiler label target=<part>-<target> (the client,
// its connections' loops, the proxy's handlers and the transport loops
// they start, the upstream's handlers, and for airouter the goroutine that
// encodes its outcomes): with -test.cpuprofile, `go tool pprof -tags`
// splits the CPU by part and target. Left unlabelled are the runtime's
// goroutines (the scheduler, the collector) and the bare proxy's flush
// timer, which httputil.ReverseProxy runs through time.AfterFunc.
func BenchmarkStreamSideBySide(b *testing.B) {
	next := make(chan struct{})
	names := [3]string{"direct", "bare", "airouter"}
	var targets [3]string
	var clients [3]*http.Client
	for i, name := range names {
		up := lockstepUpstream(b, sideChunks, next, "upstream-"+name)
		targets[i] = up
		label := "proxy-" + name
		// Built under the label, so what a proxy starts on its own carries it.
		pprof.Do(context.Background(), pprof.Labels("target", label), func(context.Context) {
			switch name {
			case "bare":
				targets[i] = serveLabelled(b, label, bareReverseProxy(up))
			case "airouter":
				targets[i] = serveLabelled(b, label, benchAirouter(b, up))
			}
		})
		clients[i] = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
		b.Cleanup(clients[i].CloseIdleConnections)
	}
	// stream runs one stream of target i under its client's label.
	stream := func(i int, short bool) {
		pprof.Do(context.Background(), pprof.Labels("target", "client-"+names[i]), func(context.Context) {
			lockstepStream(b, clients[i], next, targets[i], sideChunks, short)
		})
	}
	for range 20 { // warm the connections and the pools
		for i := range targets {
			stream(i, false)
		}
	}
	var long, short [3]float64
	order := []int{0, 1, 2}
	for b.Loop() {
		order[1], order[2] = order[2], order[1]
		for _, i := range order {
			c := testkit.ProcessCPU().Seconds()
			stream(i, false)
			m := testkit.ProcessCPU().Seconds()
			stream(i, true)
			long[i] += m - c
			short[i] += testkit.ProcessCPU().Seconds() - m
		}
	}
	n := float64(b.N)
	perStream := func(i int) float64 { return (long[i] - long[0]) / n * 1e6 }
	perChunk := func(i int) float64 {
		return ((long[i] - short[i]) - (long[0] - short[0])) / n / (sideChunks - 1) * 1e6
	}
	b.ReportMetric(perStream(1), "bare-us/stream")
	b.ReportMetric(perStream(2), "airouter-us/stream")
	b.ReportMetric(perChunk(1), "bare-us/chunk")
	b.ReportMetric(perChunk(2), "airouter-us/chunk")
	b.ReportMetric(perStream(2)/perStream(1), "stream-ratio")
	b.ReportMetric(perChunk(2)/perChunk(1), "chunk-ratio")
}

// sideChunks is how many chunks a long answer of the side-by-side has.
const sideChunks = 20

// lockstepChunk is every chunk of a lockstep answer.
func lockstepChunk() string { return chunk(" there,") }

// serveLabelled serves h on 127.0.0.1 and returns its URL. A request's
// handler sets the profiler label target=label on its goroutine and leaves
// it there, so the connection's goroutine is labelled between requests
// too, and so are the goroutines it starts (a transport's dial and its
// connection's read and write loops).
func serveLabelled(b testing.TB, label string, h http.Handler) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pprof.SetGoroutineLabels(pprof.WithLabels(r.Context(), pprof.Labels("target", label)))
		h.ServeHTTP(w, r)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

// lockstepUpstream serves chat completion streams of chunks chunks (one
// with ?short), each after a receive on next, labelled as serveLabelled
// does, and returns its URL.
func lockstepUpstream(b testing.TB, chunks int, next chan struct{}, label string) string {
	ch := []byte(lockstepChunk())
	return serveLabelled(b, label, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n := chunks
		if r.URL.Query().Has("short") {
			n = 1
		}
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := range n {
			if i > 0 {
				select {
				case <-next:
				case <-r.Context().Done():
					return
				}
			}
			_, _ = w.Write(ch)
			_ = rc.Flush()
		}
		_, _ = io.WriteString(w, sse("[DONE]"))
	}))
}

// lockstepStream runs one stream from base, an upstream of
// lockstepUpstream (directly or through a proxy) whose long answer has
// chunks chunks: the long answer, or the one-chunk one with short. It
// reads each chunk before it lets the upstream send the next.
func lockstepStream(b testing.TB, client *http.Client, next chan struct{}, base string, chunks int, short bool) {
	u := base + "/v1/chat/completions"
	n := chunks
	if short {
		u, n = u+"?short", 1
	}
	req, _ := http.NewRequest(http.MethodPost, u,
		strings.NewReader(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+masterKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: status %d", base, resp.StatusCode)
	}
	buf := make([]byte, len(lockstepChunk()))
	for i := range n {
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			b.Fatalf("%s: chunk %d: %v", base, i, err)
		}
		if i < n-1 {
			select {
			case next <- struct{}{}:
			case <-time.After(10 * time.Second):
				b.Fatalf("%s: the upstream stopped waiting after chunk %d", base, i)
			}
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
}
