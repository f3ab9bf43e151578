package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airouter/airouter/internal/testkit"
)

// failingUpstream answers every chat completion with a 500.
func failingUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		fmt.Fprint(w, `{"error":{"message":"upstream says 500","type":"server_error"}}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// metricValue is the value of the /metrics line that starts with name
// (labels included), and whether there is one.
func metricValue(metrics, name string) (string, bool) {
	for _, l := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v, true
		}
	}
	return "", false
}

// 4,200 client-chosen model names that each fail (a 500 from the
// upstream, on both credentials) through a real router whose config lists
// no models: each credential keeps at most 2,000 pair records, forgetting
// the oldest failure streaks, counted in airouter_pairs_forgotten_total
// and kept across a restart; the checkpoint, /health and /metrics stay
// bounded; the requests_total series of the forgotten pairs are deleted;
// the proxy forgets their rate windows and pools, so its bounds on names
// it keeps turn nothing away. The names are more than the proxy's bound
// on pools for names only clients send (maxLazyPools, 4,096; the 8,400
// windows stay under maxLazyPairs), so without the forgetting it would
// turn the last of them away.
func TestManyFailingClientNamesThroughARouterStayBounded(t *testing.T) {
	const names = 4200
	store := tempStore(t)
	up := failingUpstream(t)
	r := start(t, namesConfig(t, store, up, up))

	sendNames(t, r, names, nil)
	catchUp(t, r)

	var forgotten string
	check := func(when string, r *running) {
		t.Helper()
		pairs := r.live.Load().Pairs()
		if len(pairs) > 2*2000 || len(pairs) <= 2*1900 {
			t.Errorf("%s: the log keeps %d pairs for %d names on 2 credentials, want at most 4,000 and more than 3,800", when, len(pairs), names)
		}
		_, _, mb := r.do(t, "GET", "/metrics", "", nil)
		metrics := string(mb)
		if lines := strings.Count(metrics, "\n"); lines > 6000 {
			t.Errorf("%s: /metrics has %d lines", when, lines)
		}
		want := fmt.Sprint(r.live.Load().PairsForgotten())
		if got, _ := metricValue(metrics, "airouter_pairs_forgotten_total"); got != want || want == "0" {
			t.Errorf("%s: airouter_pairs_forgotten_total %q, want %s (> 0)", when, got, want)
		}
		forgotten = want
		_, _, hb := r.do(t, "GET", "/health", "", nil)
		if len(hb) > 512<<10 {
			t.Errorf("%s: /health is %d bytes", when, len(hb))
		}
	}
	check("after the names", r)
	_, _, mb := r.do(t, "GET", "/metrics", "", nil)
	metrics := string(mb)
	// The 1,000 names given their own label are the first, the oldest
	// streaks: forgotten on both credentials, their series gone.
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "auto_ai_router_requests_total{") && strings.Contains(l, `model="made-up-`) {
			t.Errorf("a forgotten pair's series is still in /metrics: %s", l)
			break
		}
	}
	for _, kind := range []string{"pairs", "pools"} {
		if v, _ := metricValue(metrics, `airouter_client_models_unkept_total{kind="`+kind+`"}`); v != "0" {
			t.Errorf("the proxy turned %s %s away: it keeps forgotten names", v, kind)
		}
	}
	before := forgotten
	r.stop()

	r2 := start(t, namesConfig(t, store, up, up))
	check("after a restart", r2)
	if forgotten != before {
		t.Errorf("forgotten %s after the restart, %s before", forgotten, before)
	}
	_, data, ok, err := r2.log.LoadCheckpoint(testkit.Context(t))
	if err != nil || !ok {
		t.Fatalf("load the checkpoint: ok %v, %v", ok, err)
	}
	if len(data) > 1<<20 {
		t.Errorf("the checkpoint is %d bytes after %d failing names", len(data), names)
	}
	_, _, mb = r2.do(t, "GET", "/metrics", "", nil)
	t.Logf("%d failing names: %d pairs kept, %s forgotten, checkpoint %d bytes, /metrics %d lines after the restart",
		names, len(r2.live.Load().Pairs()), forgotten, len(data), strings.Count(string(mb), "\n"))
}
