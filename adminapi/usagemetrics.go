package adminapi

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// usageMetrics are the counters of what answered requests used and how
// they ended for the client: tokens from the responses' usage, answers the
// client left, and the credentials' failed attempts. The names and labels
// are auto_ai_router's, so its token, error and aborted-requests panels
// read them.
type usageMetrics struct {
	input, output, reasoning, cached *prometheus.CounterVec
	aborted                          *prometheus.CounterVec
	credErrors                       *prometheus.CounterVec
}

func newUsageMetrics(reg prometheus.Registerer) (*usageMetrics, error) {
	tokens := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help},
			[]string{"credential", "model"})
	}
	u := &usageMetrics{
		input: tokens("auto_ai_router_input_tokens_total",
			"Input (prompt) tokens the upstreams' responses reported, streamed or not."),
		output: tokens("auto_ai_router_output_tokens_total",
			"Output (completion) tokens the upstreams' responses reported, streamed or not."),
		reasoning: tokens("auto_ai_router_reasoning_tokens_total",
			"Reasoning tokens, part of the output tokens, the upstreams' responses reported."),
		cached: tokens("auto_ai_router_cached_tokens_total",
			"Input tokens read from the provider's prompt cache, as the upstreams' responses reported."),
		aborted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "auto_ai_router_aborted_requests_total",
			Help: "Answers the client went away from while they were being written.",
		}, []string{"credential", "model", "endpoint"}),
		credErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "auto_ai_router_credential_errors_total",
			Help: "Upstream attempts that did not answer 2xx: an error status, a transport failure (502) or a timeout (408); attempts the client canceled are not counted.",
		}, []string{"credential"}),
	}
	if err := registerAll(reg, "usage metrics", u.input, u.output, u.reasoning, u.cached, u.aborted, u.credErrors); err != nil {
		return nil, err
	}
	return u, nil
}

// registerRuntime adds the standard process and Go runtime collectors
// (process_cpu_seconds_total, go_goroutines, ...) to a registry New made.
func registerRuntime(reg prometheus.Registerer) error {
	return registerAll(reg, "runtime metrics",
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(),
	)
}

// Tokens records the usage one answered attempt's response reported. The
// model label is bounded like the other counters' (model="other" past
// maxModelLabels); a zero count adds nothing, so a series appears only for
// the kinds of token a provider reports.
func (m *Metrics) Tokens(credential, model string, input, output, reasoning, cached int64) {
	model = m.labels.label(model)
	for kind, n := range [...]int64{input, output, reasoning, cached} {
		if n > 0 {
			m.tokenCounter(credential, model, kind).Add(float64(n))
		}
	}
}

// tokenVecs are the token counters in Tokens' order of kinds.
func (u *usageMetrics) tokenVecs() [4]*prometheus.CounterVec {
	return [4]*prometheus.CounterVec{u.input, u.output, u.reasoning, u.cached}
}

// Aborted records an answer the client went away from while it was being
// written.
func (m *Metrics) Aborted(credential, model, endpoint string) {
	m.usage.aborted.WithLabelValues(credential, m.labels.label(model), endpoint).Inc()
}

// credentialFailed reports whether an attempt failed its credential:
// status is the attempt's code (requests_total's status label), an error
// when not 2xx, and 0 for an attempt the client canceled, which is no
// error of the credential's.
func credentialFailed(status int) bool { return status != 0 && status/100 != 2 }
