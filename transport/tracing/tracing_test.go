package tracing_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/internal/testkit/collector"
	"github.com/airouter/airouter/transport/tracing"
)

func newTracer(t *testing.T, o tracing.Options) *tracing.Tracer {
	t.Helper()
	tr, err := tracing.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr
}

// request records one request span with one attempt span, as the proxy
// does.
func request(tr *tracing.Tracer) {
	ctx := tr.StartRequest(context.Background(), http.Header{}, "POST", "/v1/chat/completions")
	actx := tr.StartAttempt(ctx, http.Header{}, 1, "cred-a", "openai", "gpt", "gpt-up", "chat")
	tr.EndAttempt(actx, 200, "ok", 3, 1)
	tr.EndRequest(ctx, 200, "gpt", "r-1", 1, "ok")
}

// A collector that does not answer never holds a request up: spans that
// find the bounded queue full are dropped and counted, and every span is
// accounted for as exported or dropped.
func TestQueueNeverBlocksAndCountsWhatItDrops(t *testing.T) {
	release := make(chan struct{})
	var exports atomic.Int64
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		exports.Add(1)
		<-release // the collector hangs until the test lets it go
		w.WriteHeader(http.StatusOK)
	}))
	defer stuck.Close()
	tr := newTracer(t, tracing.Options{
		Endpoint: stuck.URL, Protocol: "http", SampleRatio: 1, QueueSize: 4, BatchSize: 2,
		Clock: clockwork.NewFakeClock(), Logger: testkit.Logger(t, hclog.Info),
	})
	const requests = 50 // 100 spans
	for range requests {
		request(tr)
	}
	testkit.Eventually(t, "an export to the hung collector", func() bool { return exports.Load() > 0 })
	full, _ := tr.Dropped()
	if full == 0 {
		t.Fatalf("no span was dropped for a full queue while the collector hung")
	}
	close(release)
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	full, failed := tr.Dropped()
	if got := tr.Exported() + full + failed; got != 2*requests {
		t.Fatalf("exported %d + queue_full %d + export_failed %d = %d, want %d", tr.Exported(), full, failed, got, 2*requests)
	}
}

// A collector that refuses exports is logged once, however many batches
// fail, and its coming back once; the failed spans are counted.
func TestCollectorDownIsLoggedOnce(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	c, srv := collector.HTTP(t)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() {
			http.Error(w, "collector overloaded", http.StatusServiceUnavailable)
			return
		}
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer front.Close()
	var logs testkit.Buffer
	tr := newTracer(t, tracing.Options{
		Endpoint: front.URL, Protocol: "http", SampleRatio: 1, Clock: clockwork.NewFakeClock(),
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info}),
	})
	for range 3 {
		request(tr)
		if err := tr.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, failed := tr.Dropped(); failed != 6 {
		t.Fatalf("export_failed = %d, want 6", failed)
	}
	if got := logs.Lines("trace collector unreachable"); len(got) != 1 {
		t.Fatalf("%d lines say the collector is unreachable, want 1:\n%s", len(got), logs.String())
	}
	refuse.Store(false)
	request(tr)
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := logs.Lines("trace collector reachable again"); len(got) != 1 {
		t.Fatalf("%d lines say the collector is back, want 1:\n%s", len(got), logs.String())
	}
	if n := len(c.Spans()); n != 2 || tr.Exported() != 2 {
		t.Fatalf("collector has %d spans, exported %d; want 2", n, tr.Exported())
	}
}

// A partial batch goes out on the export interval of the injected clock.
func TestPartialBatchGoesOutOnTheInterval(t *testing.T) {
	c, srv := collector.HTTP(t)
	clock := clockwork.NewFakeClock()
	tr := newTracer(t, tracing.Options{Endpoint: srv.URL, Protocol: "http", SampleRatio: 1, Clock: clock})
	request(tr)
	testkit.Eventually(t, "the export loop's ticker", func() bool {
		clock.Advance(tracing.DefaultInterval)
		return len(c.Spans()) == 2
	})
}

// Export headers reach the collector and are not logged.
func TestHeadersGoWithEveryExport(t *testing.T) {
	c, srv := collector.HTTP(t)
	var logs testkit.Buffer
	tr := newTracer(t, tracing.Options{
		Endpoint: strings.TrimPrefix(srv.URL, "http://"), Protocol: "http", SampleRatio: 1, Insecure: true,
		Headers: map[string]string{"Authorization": "Bearer collector-secret-token"},
		Clock:   clockwork.NewFakeClock(), ServiceName: "router-test",
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Trace}),
	})
	request(tr)
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := c.Headers()
	if len(hs) != 1 || hs[0].Get("Authorization") != "Bearer collector-secret-token" {
		t.Fatalf("export headers %v", hs)
	}
	if s := c.Spans(); len(s) != 2 || s[0].Service != "router-test" {
		t.Fatalf("spans %v", s)
	}
	if strings.Contains(logs.String(), "collector-secret-token") {
		t.Fatalf("a header value was logged:\n%s", logs.String())
	}
}

// trace_sample_ratio applies to new traces only: at 0 a new trace is not
// exported, yet its (unsampled) traceparent still goes upstream; a
// trusted client's sampled trace is kept whatever the ratio.
func TestSampleRatioAppliesToNewTraces(t *testing.T) {
	c, srv := collector.HTTP(t)
	tr := newTracer(t, tracing.Options{Endpoint: srv.URL, Protocol: "http", SampleRatio: 0,
		TrustIncoming: true, Clock: clockwork.NewFakeClock()})
	up := http.Header{}
	ctx := tr.StartRequest(context.Background(), http.Header{}, "POST", "/v1/chat/completions")
	actx := tr.StartAttempt(ctx, up, 1, "cred-a", "openai", "gpt", "gpt", "chat")
	tr.EndAttempt(actx, 200, "ok", 0, 0)
	tr.EndRequest(ctx, 200, "gpt", "r-1", 1, "ok")
	if tp := up.Get("Traceparent"); !strings.HasPrefix(tp, "00-") || !strings.HasSuffix(tp, "-00") {
		t.Errorf("upstream traceparent %q, want an unsampled one", tp)
	}
	client := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	ctx = tr.StartRequest(context.Background(), client, "POST", "/v1/chat/completions")
	tr.EndRequest(ctx, 200, "gpt", "r-2", 0, "ok")
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := c.Spans()
	if len(spans) != 1 || spans[0].TraceID() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("exported %v; want only the span of the client's sampled trace", spans)
	}
}

// Over gRPC too, a collector that is not there fails its export at once
// and the spans are counted, not retried.
func TestGRPCCollectorDownFailsFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	var logs testkit.Buffer
	tr := newTracer(t, tracing.Options{Endpoint: addr, Protocol: "grpc", Insecure: true, SampleRatio: 1,
		Clock: clockwork.NewFakeClock(), Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})})
	request(tr)
	if err := tr.ForceFlush(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	if _, failed := tr.Dropped(); failed != 2 {
		t.Fatalf("export_failed = %d, want 2", failed)
	}
	if got := logs.Lines("trace collector unreachable"); len(got) != 1 {
		t.Fatalf("%d lines say the collector is unreachable, want 1:\n%s", len(got), logs.String())
	}
}
