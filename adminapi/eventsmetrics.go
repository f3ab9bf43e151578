package adminapi

import (
	"github.com/prometheus/client_golang/prometheus"
)

// streamMetrics are GET /api/events' gauge of open streams and counters of
// the streams it refused (the subscriber limit) and cut (a client reading
// slower than the log grows; it resumes with Last-Event-ID).
type streamMetrics struct {
	open    prometheus.Gauge
	refused prometheus.Counter
	cut     prometheus.Counter
}

func newStreamMetrics(reg prometheus.Registerer) (*streamMetrics, error) {
	s := &streamMetrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "airouter_event_streams",
			Help: "GET /api/events streams open now.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "airouter_event_streams_refused_total",
			Help: "GET /api/events requests refused with 503 because the most streams allowed were open.",
		}),
		cut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "airouter_event_streams_cut_total",
			Help: "GET /api/events streams the router ended because the client read slower than the log grew (it resumes with Last-Event-ID).",
		}),
	}
	if err := registerAll(reg, "event stream metrics", s.open, s.refused, s.cut); err != nil {
		return nil, err
	}
	return s, nil
}
