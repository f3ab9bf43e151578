package adminapi

import (
	"testing"
	"time"
)

// TestAttemptsOfARoutedModelAddToTheirSeries: the proxy's attempts and
// tokens of a model config routes go through the series cache, and every
// one counts in the series /metrics shows: requests by status, their
// durations, the credential's errors (a 5xx is one, a canceled attempt is
// not), and only the kinds of token a response reported.
func TestAttemptsOfARoutedModelAddToTheirSeries(t *testing.T) {
	r := newRig(t)
	m := r.api.Metrics()
	const chat = "/v1/chat/completions"
	for range 3 {
		m.Attempt("openai-1", "gpt-4o", chat, 200, 2*time.Millisecond)
	}
	m.Attempt("openai-1", "gpt-4o", chat, 503, time.Millisecond)
	m.Attempt("openai-1", "gpt-4o", chat, 503, time.Millisecond)
	m.Attempt("openai-1", "gpt-4o", chat, 0, time.Millisecond)
	m.Attempt("openai-2", "gpt-4o", chat, 200, time.Millisecond)
	m.Tokens("openai-1", "gpt-4o", 10, 2, 0, 0)
	m.Tokens("openai-1", "gpt-4o", 5, 1, 0, 3)
	got := r.scrape()
	req := `auto_ai_router_requests_total{credential="openai-1",endpoint="/v1/chat/completions",model="gpt-4o",status=`
	wantMetrics(t, got, map[string]float64{
		req + `"200"}`: 3, req + `"503"}`: 2, req + `"0"}`: 1,
		`auto_ai_router_requests_total{credential="openai-2",endpoint="/v1/chat/completions",model="gpt-4o",status="200"}`: 1,
		`auto_ai_router_requests_duration_seconds_count{credential="openai-1",endpoint="/v1/chat/completions"}`:            6,
		`auto_ai_router_credential_errors_total{credential="openai-1"}`:                                                    2,
		`auto_ai_router_input_tokens_total{credential="openai-1",model="gpt-4o"}`:                                          15,
		`auto_ai_router_output_tokens_total{credential="openai-1",model="gpt-4o"}`:                                         3,
		`auto_ai_router_cached_tokens_total{credential="openai-1",model="gpt-4o"}`:                                         3,
	})
	for _, absent := range []string{
		`auto_ai_router_reasoning_tokens_total{credential="openai-1",model="gpt-4o"}`,
		`auto_ai_router_credential_errors_total{credential="openai-2"}`,
	} {
		if _, ok := got[absent]; ok {
			t.Errorf("%s is shown, nothing counted in it", absent)
		}
	}
}
