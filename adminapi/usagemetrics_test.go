package adminapi

import (
	"fmt"
	"testing"
	"time"
)

// TestUsageCountersStayWithinTheModelCap: the token and aborted-answer
// counters share the model label cap of the other counters: names past
// maxModelLabels count under model="other", and credential errors count
// every attempt that did not answer 2xx but a canceled one.
func TestUsageCountersStayWithinTheModelCap(t *testing.T) {
	r := newRigEdit(t, func(d *Deps) { d.ConfiguredPairs = nil })
	m := r.api.Metrics()
	const names = maxModelLabels + 50
	for i := range names {
		model := fmt.Sprintf("made-up-%05d", i)
		m.Tokens("openai-1", model, 10, 4, 2, 1)
		m.Aborted("openai-1", model, "/v1/chat/completions")
	}
	for _, status := range []int{200, 0, 400, 429, 500, 502, 408} {
		m.Attempt("openai-2", "gpt-4o", "/v1/chat/completions", status, time.Millisecond)
	}
	got := r.scrape()
	wantMetrics(t, got, map[string]float64{
		`auto_ai_router_input_tokens_total{credential="openai-1",model="other"}`:                                     10 * 50,
		`auto_ai_router_output_tokens_total{credential="openai-1",model="other"}`:                                    4 * 50,
		`auto_ai_router_reasoning_tokens_total{credential="openai-1",model="other"}`:                                 2 * 50,
		`auto_ai_router_cached_tokens_total{credential="openai-1",model="other"}`:                                    1 * 50,
		`auto_ai_router_input_tokens_total{credential="openai-1",model="made-up-00000"}`:                             10,
		`auto_ai_router_aborted_requests_total{credential="openai-1",endpoint="/v1/chat/completions",model="other"}`: 50,
		`auto_ai_router_credential_errors_total{credential="openai-2"}`:                                              5,
	})
	if _, ok := got[`auto_ai_router_input_tokens_total{credential="openai-1",model="made-up-01049"}`]; ok {
		t.Error("a model past the label limit has its own token series")
	}
	for _, name := range []string{"process_cpu_seconds_total", "go_goroutines"} {
		if _, ok := got[name]; !ok {
			t.Errorf("/metrics has no %s", name)
		}
	}
}

// BenchmarkAttemptMetrics is what the proxy's metrics cost one answered
// request: its attempt alone, and with its usage.
func BenchmarkAttemptMetrics(b *testing.B) {
	r := newRig(b)
	m := r.api.Metrics()
	for _, tokens := range []bool{false, true} {
		b.Run(fmt.Sprintf("tokens=%v", tokens), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.Attempt("openai-1", "gpt-4o", "/v1/chat/completions", 200, 300*time.Millisecond)
				if tokens {
					m.Tokens("openai-1", "gpt-4o", 120, 300, 40, 64)
				}
			}
		})
	}
}

// BenchmarkAttemptMetricsPool is an attempt and its tokens counted on one
// credential after another of pools of 2 and 1,000, every series already
// made: what a request pays for its metrics as the pool grows.
func BenchmarkAttemptMetricsPool(b *testing.B) {
	m := newRig(b).api.Metrics()
	for _, n := range []int{2, 1000} {
		creds := make([]string, n)
		for i := range creds {
			creds[i] = fmt.Sprintf("pool-%04d", i)
			m.Attempt(creds[i], "gpt-4o", "/v1/chat/completions", 200, 300*time.Millisecond)
			m.Tokens(creds[i], "gpt-4o", 120, 300, 0, 0)
		}
		b.Run(fmt.Sprintf("credentials=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c := creds[i%n]
				i += 7
				m.Attempt(c, "gpt-4o", "/v1/chat/completions", 200, 300*time.Millisecond)
				m.Tokens(c, "gpt-4o", 120, 300, 0, 0)
			}
		})
	}
}
