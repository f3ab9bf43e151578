package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/transport/tracing"
)

// BenchmarkTracing is BenchmarkForward's JSON request with tracing off
// (no Tracer: the path must allocate nothing more than without tracing)
// and on (every trace sampled, exported over OTLP/HTTP to a collector on
// 127.0.0.1 that discards what it gets), for the cost of tracing per
// request: go test ./transport/proxy -run '^$' -bench BenchmarkTracing
// -benchtime 5000x -count 5.
func BenchmarkTracing(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		benchUpstreamHeaders(w.Header())
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, chatOK("Hello there, how can I help you today?"))
	}))
	b.Cleanup(up.Close)
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			d := Deps{MasterKey: masterKey, Credentials: []Credential{{Name: "c0", Type: domain.CredentialOpenAI,
				BaseURL: up.URL + "/v1", APIKey: "sk-proj-bench0-0123456789abcdefABCDEF"}}}
			if mode == "on" {
				d.Tracer = benchTracer(b)
			}
			p, err := New(d)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(p.Close)
			cpu := testkit.ProcessCPU().Seconds()
			benchChats(b, p.Handler())
			// CPU time of the whole process (proxy, upstream, collector,
			// exporter) per request: steadier than wall time on a shared
			// machine.
			b.ReportMetric((testkit.ProcessCPU().Seconds()-cpu)*1e9/float64(b.N), "cpu-ns/op")
		})
	}
}

// benchTracer is a tracer that samples every trace and exports it over
// OTLP/HTTP to a collector on 127.0.0.1 that takes each export and
// discards it, so that what is measured is the router's side.
func benchTracer(b *testing.B) *tracing.Tracer {
	coll := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(coll.Close)
	tr, err := tracing.New(context.Background(), tracing.Options{
		Endpoint: coll.URL, Protocol: "http", SampleRatio: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = tr.Shutdown(context.Background())
		if full, failed := tr.Dropped(); full+failed > 0 {
			b.Logf("dropped %d spans (queue full), %d (export failed)", full, failed)
		}
	})
	return tr
}
