package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/internal/testkit/collector"
)

const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
	clientParent  = "00-" + clientTraceID + "-" + clientSpanID + "-01"
	collectorKey  = "Bearer collector-secret-7f3a"
)

// tracedUpstream answers chat completions with status and keeps the
// traceparent of every request it gets.
type tracedUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	parents []string
	states  []string
}

func newTracedUpstream(t *testing.T, status int) *tracedUpstream {
	t.Helper()
	u := &tracedUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.parents = append(u.parents, r.Header.Get("Traceparent"))
		u.states = append(u.states, r.Header.Get("Tracestate"))
		u.mu.Unlock()
		if status != http.StatusOK {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprint(w, `{"error":{"message":"upstream failed","type":"server_error"}}`)
			return
		}
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
			fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4,\"total_tokens\":9}}\n\n")
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"gpt-up","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *tracedUpstream) traceparents() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.parents...)
}

func (u *tracedUpstream) tracestates() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.states...)
}

// tracingConfig: cred-a on failing, cred-b (fallback, so always second) on
// answering, both serving gpt-test (sent upstream as gpt-up), and an otel
// section sending to endpoint over protocol.
func tracingConfig(t *testing.T, failing, answering *tracedUpstream, endpoint, protocol string, trust bool) *config.Config {
	t.Helper()
	doc := fmt.Sprintf(`server:
  master_key: %s
  shutdown_delay: 0s
events:
  store_dir: %s
  storage: memory
credentials:
  - name: cred-a
    type: openai
    api_key: sk-upstream-secret-a
    base_url: %s/v1
  - name: cred-b
    type: openai
    api_key: sk-upstream-secret-b
    base_url: %s/v1
    is_fallback: true
models:
  - name: gpt-test
    credential: cred-a
    model: gpt-up
  - name: gpt-test
    credential: cred-b
    model: gpt-up
otel:
  enabled: true
  endpoint: %s
  protocol: %s
  trust_incoming_traceparent: %t
  logs_enabled: true
  headers:
    Authorization: os.environ/AIROUTER_TEST_COLLECTOR_KEY
`, testMasterKey, tempStore(t), failing.URL, answering.URL, endpoint, protocol, trust)
	env := func(name string) (string, bool) {
		if name == "AIROUTER_TEST_COLLECTOR_KEY" {
			return collectorKey, true
		}
		return "", false
	}
	cfg, err := config.Parse([]byte(doc), env)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// tracedChat sends one chat completion with the client's traceparent.
func tracedChat(t *testing.T, r *running) int {
	t.Helper()
	return tracedPost(t, r, testMasterKey, `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`)
}

// tracedPost sends body to /v1/chat/completions with key and the client's
// traceparent and tracestate, and returns the status.
func tracedPost(t *testing.T, r *running, key, body string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", r.url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Traceparent", clientParent)
	req.Header.Set("Tracestate", "vendor=client-state")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// spansOfKind splits what the collector got into server and client spans,
// the client spans in attempt order.
func spansOfKind(t *testing.T, spans []collector.Span) (server collector.Span, clients []collector.Span) {
	t.Helper()
	var servers []collector.Span
	for _, s := range spans {
		switch s.GetKind() {
		case tracepb.Span_SPAN_KIND_SERVER:
			servers = append(servers, s)
		case tracepb.Span_SPAN_KIND_CLIENT:
			clients = append(clients, s)
		}
	}
	if len(servers) != 1 || len(clients) != 2 {
		t.Fatalf("got %d server and %d client spans, want 1 and 2 (a failover): %v", len(servers), len(clients), spans)
	}
	if a, _ := clients[0].Attr("airouter.attempt"); a != "1" {
		clients[0], clients[1] = clients[1], clients[0]
	}
	return servers[0], clients
}

func wantAttrs(t *testing.T, s collector.Span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := s.Attr(k); !ok || got != v {
			t.Errorf("span %q: %s = %q (present %v), want %q", s.GetName(), k, got, ok, v)
		}
	}
}

// noSecrets fails when a key or the collector's header shows in a span.
func noSecrets(t *testing.T, spans []collector.Span) {
	t.Helper()
	for _, s := range spans {
		text := s.String()
		for _, secret := range []string{"sk-upstream-secret", testMasterKey, "collector-secret"} {
			if strings.Contains(text, secret) {
				t.Errorf("span %q holds a secret (%s)", s.GetName(), secret)
			}
		}
	}
}

// A request that fails over is one server span with a client span per
// attempt, exported over OTLP/HTTP: GenAI attributes, the attempt's
// credential, status, class and tokens; each upstream got a traceparent
// naming its own attempt's span; the client's trusted traceparent is the
// parent. The export header (from os.environ) reaches the collector and
// no log line; the unimplemented key is a warning.
func TestTracesOfAFailoverOverHTTP(t *testing.T) {
	coll, srv := collector.HTTP(t)
	a, b := newTracedUpstream(t, http.StatusInternalServerError), newTracedUpstream(t, http.StatusOK)
	cfg := tracingConfig(t, a, b, srv.URL, "http", true)
	if !strings.Contains(strings.Join(cfg.Warnings, "\n"), "otel.logs_enabled") {
		t.Errorf("no warning names otel.logs_enabled: %q", cfg.Warnings)
	}
	var logs testkit.Buffer
	r := startReplicaLogging(t, cfg, hclog.New(&hclog.LoggerOptions{
		Output: io.MultiWriter(&logs, testkit.Writer(t)), Level: hclog.Debug}))
	if st := tracedChat(t, r); st != http.StatusOK {
		t.Fatalf("status %d", st)
	}
	r.stop() // shutdown exports what is queued
	server, clients := spansOfKind(t, coll.Spans())
	checkFailoverTrace(t, server, clients, a, b)
	if server.TraceID() != clientTraceID || server.ParentSpanID() != clientSpanID {
		t.Errorf("server span trace %s parent %s; want the client's %s %s",
			server.TraceID(), server.ParentSpanID(), clientTraceID, clientSpanID)
	}
	if h := coll.Headers(); len(h) == 0 || h[0].Get("Authorization") != collectorKey {
		t.Errorf("the collector got headers %v, want the configured Authorization", h)
	}
	if strings.Contains(logs.String(), "collector-secret") {
		t.Errorf("the collector's header value was logged")
	}
	noSecrets(t, coll.Spans())
}

// checkFailoverTrace checks the spans of the request tracedChat sent
// through a failing then an answering upstream.
func checkFailoverTrace(t *testing.T, server collector.Span, clients []collector.Span, a, b *tracedUpstream) {
	t.Helper()
	if server.Service != "airouter" || server.Version != readBuildVersion().Version || server.Version == "" {
		t.Errorf("service.name %q, service.version %q", server.Service, server.Version)
	}
	wantAttrs(t, server, map[string]string{
		"http.request.method": "POST", "http.route": "/v1/chat/completions",
		"http.response.status_code": "200", "gen_ai.request.model": "gpt-test",
		"airouter.attempts": "2", "airouter.outcome": "ok",
	})
	wantAttrs(t, clients[0], map[string]string{
		"airouter.credential": "cred-a", "airouter.attempt": "1", "http.response.status_code": "500",
		"airouter.outcome": "server_error", "error.type": "server_error",
		"gen_ai.request.model": "gpt-up", "gen_ai.provider.name": "openai", "gen_ai.operation.name": "chat",
	})
	wantAttrs(t, clients[1], map[string]string{
		"airouter.credential": "cred-b", "airouter.attempt": "2", "http.response.status_code": "200",
		"airouter.outcome": "ok", "airouter.model": "gpt-test", "gen_ai.request.model": "gpt-up",
		"gen_ai.usage.input_tokens": "7", "gen_ai.usage.output_tokens": "2",
	})
	for i, up := range []*tracedUpstream{a, b} {
		c := clients[i]
		if c.TraceID() != server.TraceID() || c.ParentSpanID() != server.SpanID() {
			t.Errorf("attempt %d: trace %s parent %s, want the server span's %s %s",
				i+1, c.TraceID(), c.ParentSpanID(), server.TraceID(), server.SpanID())
		}
		want := "00-" + c.TraceID() + "-" + c.SpanID() + "-01"
		if got := up.traceparents(); len(got) != 1 || got[0] != want {
			t.Errorf("upstream of attempt %d got traceparent %q, want %q", i+1, got, want)
		}
	}
}

// With trust_incoming_traceparent false, a client's traceparent is not
// adopted: the request starts a new trace, and that trace (not the
// client's) goes upstream. Exported over OTLP/gRPC.
func TestUntrustedTraceparentStartsANewTraceOverGRPC(t *testing.T) {
	coll, addr := collector.GRPC(t)
	a, b := newTracedUpstream(t, http.StatusInternalServerError), newTracedUpstream(t, http.StatusOK)
	r := start(t, tracingConfig(t, a, b, addr, "grpc", false))
	if st := tracedChat(t, r); st != http.StatusOK {
		t.Fatalf("status %d", st)
	}
	r.stop()
	server, clients := spansOfKind(t, coll.Spans())
	checkFailoverTrace(t, server, clients, a, b)
	if server.TraceID() == clientTraceID || len(server.GetParentSpanId()) != 0 {
		t.Errorf("server span trace %s parent %q; want a new root", server.TraceID(), server.ParentSpanID())
	}
	if h := coll.Headers(); len(h) == 0 || h[0].Get("Authorization") != collectorKey {
		t.Errorf("the collector got metadata %v, want the configured Authorization", h)
	}
	if got := b.tracestates(); len(got) != 1 || got[0] != "" {
		t.Errorf("upstream got the untrusted client's tracestate %q", got)
	}
	noSecrets(t, coll.Spans())
}

// A collector that is down costs requests nothing: they succeed, the
// router says so in one log line however many exports fail, and the
// spans it could not export are counted on /metrics.
func TestCollectorDownDropsAndCounts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	_ = ln.Close() // nothing listens there any more
	a, b := newTracedUpstream(t, http.StatusInternalServerError), newTracedUpstream(t, http.StatusOK)
	var logs testkit.Buffer
	r := startReplicaLogging(t, tracingConfig(t, a, b, dead, "http", true), hclog.New(&hclog.LoggerOptions{
		Output: io.MultiWriter(&logs, testkit.Writer(t)), Level: hclog.Info}))
	const requests = 3
	for range requests {
		if st := tracedChat(t, r); st != http.StatusOK {
			t.Fatalf("status %d with the collector down", st)
		}
		if err := r.tracer.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := logs.Lines("trace collector unreachable"); len(got) != 1 {
		t.Errorf("%d log lines say the collector is unreachable, want 1:\n%s", len(got), logs.String())
	}
	_, _, metrics := r.do(t, "GET", "/metrics", "", nil)
	want := fmt.Sprintf(`airouter_trace_spans_dropped_total{reason="export_failed"} %d`, 3*requests)
	if !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics lacks %s:\n%s", want, grepLines(string(metrics), "airouter_trace"))
	}
	if strings.Contains(logs.String(), "collector-secret") {
		t.Errorf("the collector's header value was logged")
	}
}

// With tracing off the proxy keeps passing a client's traceparent through
// unchanged, as any header, and nothing is exported.
func TestTracingOffPassesTraceparentThrough(t *testing.T) {
	a, b := newTracedUpstream(t, http.StatusInternalServerError), newTracedUpstream(t, http.StatusOK)
	cfg := tracingConfig(t, a, b, "localhost:4317", "grpc", true)
	cfg.OTel.Enabled = false
	r := start(t, cfg)
	if st := tracedChat(t, r); st != http.StatusOK {
		t.Fatalf("status %d", st)
	}
	if r.tracer != nil {
		t.Fatal("a tracer with tracing off")
	}
	if got := b.traceparents(); len(got) != 1 || got[0] != clientParent {
		t.Errorf("upstream got traceparent %q, want the client's %q", got, clientParent)
	}
}
