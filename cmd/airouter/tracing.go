package main

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/airouter/airouter/transport/proxy"
	"github.com/airouter/airouter/transport/tracing"
)

// The proxy reaches the tracer through its own interface.
var _ proxy.Tracer = (*tracing.Tracer)(nil)

// startTracing builds the tracer the otel section asks for, on the
// router's clock, and registers its counters on the admin API's registry;
// nil when tracing is off. It does not connect: a collector that is down
// is logged at the first export.
func (rt *router) startTracing(ctx context.Context, reg *prometheus.Registry) error {
	o := rt.cfg.OTel
	if !o.Tracing() {
		return nil
	}
	t, err := tracing.New(ctx, tracing.Options{
		Endpoint:       o.Endpoint,
		Protocol:       o.Protocol,
		Insecure:       o.Insecure,
		Headers:        o.Headers,
		ServiceName:    o.ServiceName,
		ServiceVersion: readBuildVersion().Version,
		SampleRatio:    o.TraceSampleRatio,
		TrustIncoming:  o.TrustIncomingTraceparent,
		Clock:          rt.clock,
		Logger:         rt.logger.Named("tracing"),
	})
	if err != nil {
		return err
	}
	if err := registerTraceMetrics(reg, t); err != nil {
		_ = t.Shutdown(ctx)
		return err
	}
	rt.tracer = t
	rt.logger.Info("tracing on", "endpoint", o.Endpoint, "protocol", o.Protocol,
		"sample_ratio", o.TraceSampleRatio, "trust_incoming_traceparent", o.TrustIncomingTraceparent)
	return nil
}

// registerTraceMetrics counts the spans the collector took and those lost
// on the way: to a full queue, or in an export that failed.
func registerTraceMetrics(reg *prometheus.Registry, t *tracing.Tracer) error {
	dropped := func(reason string, n func() uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "airouter_trace_spans_dropped_total",
			Help:        "Trace spans dropped instead of exported: queue_full (the export queue was full) or export_failed (the collector did not take them).",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, func() float64 { return float64(n()) })
	}
	cs := []prometheus.Collector{
		dropped("queue_full", func() uint64 { q, _ := t.Dropped(); return q }),
		dropped("export_failed", func() uint64 { _, f := t.Dropped(); return f }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "airouter_trace_spans_exported_total",
			Help: "Trace spans the collector accepted.",
		}, func() float64 { return float64(t.Exported()) }),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// tracingShutdownTimeout bounds the last export at shutdown.
const tracingShutdownTimeout = 5 * time.Second

// stopTracing exports the spans still queued, within a few seconds; a
// collector that is down only loses them (counted), it does not fail the
// shutdown.
func (rt *router) stopTracing() {
	if rt.tracer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracingShutdownTimeout)
	defer cancel()
	if err := rt.tracer.Shutdown(ctx); err != nil {
		rt.logger.Warn("stopping tracing", "error", err)
	}
}
