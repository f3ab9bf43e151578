package adminapi

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/airouter/airouter/domain"
)

// durationBuckets are the request duration buckets, 21 from 50 ms to 10
// minutes, kept with the metric names (see the package doc) so existing
// dashboards' quantiles read alike.
var durationBuckets = []float64{
	0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5,
	10, 15, 20, 30, 45, 60, 120, 240, 360, 600,
}

// hopBuckets bound the upstream attempts of one client request.
var hopBuckets = []float64{1, 2, 3, 4, 5, 6, 8, 10, 15, 20}

// Metrics are the counters and histograms fed by events: the proxy's
// requests through the methods below (the wiring hands *Metrics to the
// proxy as its proxy.Metrics), and bans, unbans, cooldowns and benches
// through API.Observe. The auto_ai_router_* names are kept for existing
// dashboards and alerts (see the package doc). It is safe for concurrent
// use.
type Metrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	bans      *prometheus.CounterVec
	unbans    *prometheus.CounterVec
	cooldowns *prometheus.CounterVec
	benches   *prometheus.CounterVec
	unbenches *prometheus.CounterVec
	hops      prometheus.Histogram
	exhausted *prometheus.CounterVec
	// usage counts tokens, aborted answers and credential errors.
	usage *usageMetrics
	// origins counts bans by origin and unbans by what ended them.
	origins *originMetrics
	// recovery counts panic-routed requests and recovery probes.
	recovery *recoveryMetrics
	// guards counts withheld and shadow bans.
	guards *guardMetrics
	// streams counts GET /api/events' open, refused and cut streams.
	streams *streamMetrics
	// labels bounds the model label values (see maxModelLabels).
	labels *modelLabels
	// status holds the status labels of attempts and exhausted requests.
	status statusDigits
	// attempts and tokenCounters find the series Attempt and Tokens add
	// to without WithLabelValues (seriesCache).
	attempts      seriesCache[attemptKey, *attemptSeries]
	tokenCounters seriesCache[tokenKey, prometheus.Counter]
}

func newMetrics(reg prometheus.Registerer, labels *modelLabels) (*Metrics, error) {
	m := &Metrics{
		labels: labels,
		status: newStatusDigits(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "auto_ai_router_requests_total",
			Help: "Upstream attempts, retries and fallback hops included; a transport failure counts as 502, a timeout as 408.",
		}, []string{"credential", "model", "endpoint", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "auto_ai_router_requests_duration_seconds",
			Help:    "Duration of upstream attempts.",
			Buckets: durationBuckets,
		}, []string{"credential", "endpoint"}),
		bans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "auto_ai_router_credential_ban_events_total",
			Help: "Bans imposed; admin bans have error_code 0 and a wildcard ban has model *.",
		}, []string{"credential", "model", "error_code"}),
		unbans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "auto_ai_router_credential_unban_events_total",
			Help: "Bans lifted by an admin or by recovery, or ended by expiry, one per ban.",
		}, []string{"credential", "model"}),
		cooldowns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airouter_cooldown_events_total",
			Help: "Cooldowns started: an upstream's Retry-After, a step of the rate-limit ladder (cooldown.rate_limit_base), a 401 cooling the whole credential (model *, cooldown.auth).",
		}, []string{"credential", "model", "status"}),
		benches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airouter_model_bench_events_total",
			Help: "Models benched on every credential after failing on several.",
		}, []string{"model"}),
		unbenches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airouter_model_unbench_events_total",
			Help: "Model benches lifted by an admin (POST /api/unbench).",
		}, []string{"model"}),
		hops: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "airouter_fallback_hops",
			Help:    "Upstream attempts made for one client request.",
			Buckets: hopBuckets,
		}),
		exhausted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airouter_exhausted_requests_total",
			Help: "Client requests answered by the router because no candidate served them, by the status sent.",
		}, []string{"status"}),
	}
	if err := registerAll(reg, "admin metrics",
		m.requests, m.duration, m.bans, m.unbans, m.cooldowns, m.benches, m.unbenches, m.hops, m.exhausted,
	); err != nil {
		return nil, err
	}
	u, err := newUsageMetrics(reg)
	if err != nil {
		return nil, err
	}
	m.usage = u
	if m.recovery, err = newRecoveryMetrics(reg); err != nil {
		return nil, err
	}
	if m.guards, err = newGuardMetrics(reg); err != nil {
		return nil, err
	}
	if m.origins, err = newOriginMetrics(reg); err != nil {
		return nil, err
	}
	if m.streams, err = newStreamMetrics(reg); err != nil {
		return nil, err
	}
	return m, nil
}

// Attempt records one upstream attempt: status is the HTTP status, or 502
// for a transport failure and 408 for a timeout.
func (m *Metrics) Attempt(credential, model, endpoint string, status int, took time.Duration) {
	s := m.attempt(credential, m.labels.label(model), endpoint, status)
	s.requests.Inc()
	s.duration.Observe(took.Seconds())
	if s.failed != nil {
		s.failed.Inc()
	}
}

// banEnded counts the end of a ban on k. For a model config does not
// route it deletes the ban's series and counts the unban under
// model="other": series would otherwise stay for every name ever banned.
func (m *Metrics) banEnded(k domain.Key) {
	if k.Model == "" {
		k.Model = domain.AllModels
	}
	if m.labels.routed(k.Model) {
		m.unbans.WithLabelValues(k.Credential, k.Model).Inc()
		return
	}
	m.unbans.WithLabelValues(k.Credential, otherModel).Inc()
	m.forgetSeries(k, m.bans)
}

// Request records how many upstream attempts one client request made.
func (m *Metrics) Request(hops int) {
	m.hops.Observe(float64(hops))
}

// Exhausted records a request no candidate served, by the status the
// router answered with (429, 502, 503, 504, ...).
func (m *Metrics) Exhausted(status int) {
	m.exhausted.WithLabelValues(m.status.label(status)).Inc()
}

// metricsHandler serves the API's registry and the per-pair gauges
// (scrapeGatherer); it needs no key.
func (a *API) metricsHandler() http.Handler {
	return promhttp.HandlerFor(scrapeGatherer{a}, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
	})
}
