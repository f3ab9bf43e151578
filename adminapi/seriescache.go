package adminapi

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// The proxy adds to a handful of series for every attempt: its request
// count and duration, and for an answer its tokens. A vector's
// WithLabelValues hashes every label value and takes the vector's lock;
// these caches find the same series in one lock-free map read. Only
// series of routed models are kept: forgetSeries never deletes those, so
// a kept series is always the one the vector exports. Their number is
// bounded by config (credentials, routed models, endpoints, statuses).

// attemptKey names the series one attempt adds to.
type attemptKey struct {
	credential, model, endpoint string
	status                      int
}

// attemptSeries are the series of one attemptKey; failed is nil for a
// status that is no credential error.
type attemptSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
	failed   prometheus.Counter
}

// tokenKey names one token counter: a credential, a model label value
// and the kind of token (an index into usageMetrics.tokenVecs).
type tokenKey struct {
	credential, model string
	kind              int
}

// seriesCache holds series by their labels: a sync.Map, whose reads of
// keys already stored take no lock and allocate nothing.
type seriesCache[K comparable, V any] struct{ m sync.Map }

func (c *seriesCache[K, V]) load(k K) (V, bool) {
	v, ok := c.m.Load(k)
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}

// keep stores v as k's series unless one is there already, and returns
// the one stored.
func (c *seriesCache[K, V]) keep(k K, v V) V {
	got, _ := c.m.LoadOrStore(k, v)
	return got.(V)
}

// attempt returns the series of an attempt; model is already a label
// value.
func (m *Metrics) attempt(credential, model, endpoint string, status int) *attemptSeries {
	k := attemptKey{credential, model, endpoint, status}
	if s, ok := m.attempts.load(k); ok {
		return s
	}
	s := &attemptSeries{
		requests: m.requests.WithLabelValues(credential, model, endpoint, m.status.label(status)),
		duration: m.duration.WithLabelValues(credential, endpoint),
	}
	if credentialFailed(status) {
		s.failed = m.usage.credErrors.WithLabelValues(credential)
	}
	if !m.labels.routed(model) {
		return s
	}
	return m.attempts.keep(k, s)
}

// tokenCounter returns the counter of one kind of token; model is a
// label value.
func (m *Metrics) tokenCounter(credential, model string, kind int) prometheus.Counter {
	k := tokenKey{credential, model, kind}
	if c, ok := m.tokenCounters.load(k); ok {
		return c
	}
	c := m.usage.tokenVecs()[kind].WithLabelValues(credential, model)
	if !m.labels.routed(model) {
		return c
	}
	return m.tokenCounters.keep(k, c)
}
