package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/internal/testkit/collector"
)

// The request span says how a request ended: a stream's attempt span ends
// with the stream and carries its usage; an exhausted request is a failed
// span with outcome "exhausted" after its attempts; a request refused
// before any attempt (a wrong key) is "refused", with no attempt span.
func TestTraceOutcomes(t *testing.T) {
	coll, srv := collector.HTTP(t)
	a, b := newTracedUpstream(t, http.StatusInternalServerError), newTracedUpstream(t, http.StatusOK)
	r := start(t, tracingConfig(t, a, b, srv.URL, "http", true))
	stream := `{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	if st := tracedPost(t, r, testMasterKey, stream); st != http.StatusOK {
		t.Fatalf("stream: status %d", st)
	}
	r.stop()
	server, clients := spansOfKind(t, coll.Spans())
	wantAttrs(t, server, map[string]string{"airouter.outcome": "ok", "airouter.attempts": "2"})
	wantAttrs(t, clients[1], map[string]string{
		"airouter.outcome": "ok", "gen_ai.usage.input_tokens": "5", "gen_ai.usage.output_tokens": "4"})
	if got := b.tracestates(); len(got) != 1 || got[0] != "vendor=client-state" {
		t.Errorf("upstream got tracestate %q, want the trusted client's", got)
	}

	coll, srv = collector.HTTP(t)
	down := newTracedUpstream(t, http.StatusInternalServerError)
	r = start(t, tracingConfig(t, a, down, srv.URL, "http", true))
	if st := tracedChat(t, r); st != http.StatusBadGateway {
		t.Fatalf("all upstreams failing: status %d", st)
	}
	if st := tracedPost(t, r, "sk-wrong-key", `{"model":"gpt-test"}`); st != http.StatusUnauthorized {
		t.Fatalf("wrong key: status %d", st)
	}
	r.stop()
	var outcomes []string
	for _, s := range coll.Spans() {
		if s.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
			continue
		}
		o, _ := s.Attr("airouter.outcome")
		st, _ := s.Attr("http.response.status_code")
		n, _ := s.Attr("airouter.attempts")
		failed := s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR
		outcomes = append(outcomes, fmt.Sprintf("%s %s attempts=%s failed=%t", o, st, n, failed))
	}
	slices.Sort(outcomes)
	want := []string{"exhausted 502 attempts=2 failed=true", "refused 401 attempts=0 failed=false"}
	if !slices.Equal(outcomes, want) {
		t.Errorf("request spans %q, want %q", outcomes, want)
	}
	if n := len(coll.Spans()); n != 4 {
		t.Errorf("%d spans, want 4: two requests, two attempts", n)
	}
}

// An Anthropic credential's attempt names its provider, and its tokens
// come from the Messages API's usage.
func TestTraceOfAnAnthropicAttempt(t *testing.T) {
	coll, srv := collector.HTTP(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-up","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":11,"output_tokens":3}}`)
	}))
	t.Cleanup(up.Close)
	doc := fmt.Sprintf(`server:
  master_key: %s
  shutdown_delay: 0s
events:
  store_dir: %s
  storage: memory
credentials:
  - name: claude
    type: anthropic
    api_key: sk-ant-secret-0123456789
    base_url: %s
models:
  - name: claude-test
    credential: claude
    model: claude-up
otel:
  enabled: true
  endpoint: %s
  protocol: http
`, testMasterKey, tempStore(t), up.URL, srv.URL)
	cfg, err := config.Parse([]byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, cfg)
	st, _, body := r.do(t, "POST", "/v1/messages", testMasterKey, map[string]any{
		"model": "claude-test", "max_tokens": 10, "messages": []map[string]string{{"role": "user", "content": "hi"}}})
	if st != http.StatusOK {
		t.Fatalf("status %d: %s", st, body)
	}
	r.stop()
	var attempt collector.Span
	for _, s := range coll.Spans() {
		if s.GetKind() == tracepb.Span_SPAN_KIND_CLIENT {
			attempt = s
		}
	}
	if attempt.Span == nil || attempt.GetName() != "chat claude-up" {
		t.Fatalf("no attempt span named \"chat claude-up\" in %v", coll.Spans())
	}
	wantAttrs(t, attempt, map[string]string{
		"gen_ai.provider.name": "anthropic", "gen_ai.system": "anthropic", "gen_ai.operation.name": "chat",
		"gen_ai.request.model": "claude-up", "airouter.credential": "claude",
		"gen_ai.usage.input_tokens": "11", "gen_ai.usage.output_tokens": "3",
	})
	for _, s := range coll.Spans() {
		if strings.Contains(s.String(), "sk-ant-secret") {
			t.Errorf("span %q holds the credential's key", s.GetName())
		}
	}
}
