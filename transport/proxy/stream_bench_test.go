package proxy

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
)

// BenchmarkStreamRelay measures what relaying one SSE chunk costs the
// proxy: the upstream sends a chunk only after the client has read the
// previous one, so every chunk is one upstream read, one mask and usage
// pass, one write and one flush. Each iteration streams a short (1 chunk)
// and a long (1+relayChunks chunks) answer through the proxy and the same
// two straight from the upstream; allocs/chunk is the proxy's extra
// allocations per extra chunk (proxied minus direct), so the per-request
// cost and the upstream's and client's own allocations cancel out.
//
//	go test -run '^$' -bench BenchmarkStreamRelay ./transport/proxy/
func BenchmarkStreamRelay(b *testing.B) {
	measure := streamRelayAllocs(b)
	var proxied, direct float64
	b.ReportAllocs()
	for b.Loop() {
		p, d := measure()
		proxied, direct = proxied+p, direct+d
	}
	per := float64(b.N) * relayChunks
	b.ReportMetric((proxied-direct)/per, "allocs/chunk")
	b.ReportMetric(direct/per, "direct-allocs/chunk")
}

// TestStreamRelayAllocatesNothingPerChunk holds the relay to what
// BenchmarkStreamRelay measures: over ten answers of 101 chunks, the
// proxy adds less than half an allocation a chunk to a direct fetch (one
// allocation a chunk would show as 1; the rest is the runtime's own
// background allocations).
func TestStreamRelayAllocatesNothingPerChunk(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts under the race detector are not the relay's own")
	}
	measure := streamRelayAllocs(t)
	const runs = 10
	var proxied, direct float64
	for range runs {
		p, d := measure()
		proxied, direct = proxied+p, direct+d
	}
	if per := (proxied - direct) / (runs * relayChunks); per >= 0.5 {
		t.Errorf("the relay allocates %.2f objects a chunk, want none", per)
	}
}

// relayChunks is how many chunks a long answer has more than a short one.
const relayChunks = 100

// streamRelayAllocs starts an upstream and the proxy and returns a
// function that streams a long and a short answer through the proxy and
// directly, returning the allocations the long answers made more than the
// short ones, proxied and direct.
func streamRelayAllocs(b testing.TB) func() (proxied, direct float64) {
	next := make(chan struct{})
	up := lockstepUpstream(b, relayChunks+1, next, "upstream")
	p := benchProxy(b, up)
	pxs := httptest.NewServer(p.Handler())
	b.Cleanup(pxs.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
	b.Cleanup(client.CloseIdleConnections)
	// stream runs one request and returns the allocations made meanwhile.
	stream := func(base string, short bool) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		lockstepStream(b, client, next, base, relayChunks+1, short)
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}
	return func() (proxied, direct float64) {
		proxied = float64(stream(pxs.URL, false)) - float64(stream(pxs.URL, true))
		direct = float64(stream(up, false)) - float64(stream(up, true))
		return proxied, direct
	}
}
