package adminapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/airouter/airouter/domain"
)

// Gauges read from the current snapshot (and the log's counters) at
// scrape time: nothing is kept in step by hand, so they cannot drift.
var (
	descCredBanned = prometheus.NewDesc("auto_ai_router_credential_banned",
		"1 when the credential has an active ban on any model.", []string{"credential"}, nil)
	descCredRPM = prometheus.NewDesc("auto_ai_router_credential_rpm_current",
		"Requests in the last minute per credential (proxy credentials left out).", []string{"credential"}, nil)
	descCredTPM = prometheus.NewDesc("auto_ai_router_credential_tpm_current",
		"Tokens in the last minute per credential (proxy credentials left out).", []string{"credential"}, nil)
	descBansActive = prometheus.NewDesc("airouter_bans_active",
		"Active bans (a wildcard ban is one) by origin.", []string{"origin"}, nil)
	descCooldowns = prometheus.NewDesc("airouter_cooldowns_active",
		"Pairs held back by an upstream's Retry-After now.", nil, nil)
	descBenched = prometheus.NewDesc("airouter_benched_models",
		"Models benched on every credential now.", nil, nil)
	descApplied = prometheus.NewDesc("airouter_snapshot_applied_seq",
		"Log position the routing snapshot reflects.", nil, nil)
	descLag = prometheus.NewDesc("airouter_snapshot_lag_events",
		"Events in the log not yet reflected by the routing snapshot.", nil, nil)
	descSkipped = prometheus.NewDesc("airouter_events_skipped_total",
		"Events the projections ignored, by why.", []string{"reason"}, nil)
	descConnected = prometheus.NewDesc("airouter_log_connected",
		"1 when the event log's NATS connection is up.", nil, nil)
	descStoreFault = prometheus.NewDesc("airouter_log_store_faulted",
		"1 while the event log's store cannot write (a full disk); /health names the cause.", nil, nil)
	descServerRestarts = prometheus.NewDesc("airouter_log_server_restarts_total",
		"Times the event log's server process was started again after it exited (a crash, or a store fault it recovers from); absent while the server runs in the router's process.", nil, nil)
	descMissing = prometheus.NewDesc("airouter_log_missing_events",
		"Stream messages the event log lost before this process started (a damaged store); /health names the first.", nil, nil)
	descPublished = prometheus.NewDesc("airouter_log_published_total",
		"Outcome events the log acknowledged.", nil, nil)
	descDropped = prometheus.NewDesc("airouter_log_publish_dropped_total",
		"Outcome events dropped because the publish queue was full or the log was closing.", nil, nil)
	descRejected = prometheus.NewDesc("auto_ai_router_credential_selection_rejected_total",
		"Candidates selection skipped, by reason (banned, cooling_down, benched, rate_limited).", []string{"reason"}, nil)
	descFailed = prometheus.NewDesc("airouter_log_publish_failures_total",
		"Outcome publishes that failed or timed out.", nil, nil)
	descLabelOverflow = prometheus.NewDesc("airouter_metric_model_labels_overflow_total",
		"Counts recorded under model=\"other\" because more model names than the label limit were seen.", nil, nil)
	descUnkept = prometheus.NewDesc("airouter_client_models_unkept_total",
		"Client-chosen model names the proxy served past its bounds without keeping: pools (requests) and pairs (rate windows).", []string{"kind"}, nil)
	descForgotten = prometheus.NewDesc("airouter_pairs_forgotten_total",
		"Pair records the log's state forgot while they held failure counts, to keep a credential within its bound on records (since the log's start).", nil, nil)
)

// collector is the prometheus.Collector of the scrape-time gauges.
type collector struct{ a *API }

// Describe sends every descriptor the collector may emit.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		descCredBanned, descCredRPM, descCredTPM, descModelRPM, descModelTPM, descBansActive,
		descCooldowns, descBenched, descApplied, descLag, descSkipped,
		descConnected, descStoreFault, descServerRestarts, descMissing, descPublished, descDropped, descFailed, descRejected,
		descLabelOverflow, descPairsOmitted, descUnkept, descForgotten,
	} {
		ch <- d
	}
}

// Collect reads one snapshot and the log's state.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	a := c.a
	snap := a.current()
	now := a.now()
	emit := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		m, err := prometheus.NewConstMetric(d, t, v, labels...)
		if err != nil {
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	}
	for _, cr := range a.cf().creds {
		banned := 0.0
		if snap.CredentialBanned(cr.Name, now) {
			banned = 1
		}
		emit(descCredBanned, prometheus.GaugeValue, banned, cr.Name)
		if cr.Type == domain.CredentialProxy {
			continue // a relay's load is its upstream's
		}
		rpm, tpm := a.usage(cr.Name, "")
		emit(descCredRPM, prometheus.GaugeValue, float64(rpm), cr.Name)
		emit(descCredTPM, prometheus.GaugeValue, float64(tpm), cr.Name)
	}
	// The per-pair gauges and airouter_pairs_omitted are pairFamilies'.
	emit(descForgotten, prometheus.CounterValue, float64(snap.PairsForgotten()))
	cooling := snap.CoolingPairs(now)
	byOrigin := map[domain.Origin]int{domain.OriginAdmin: 0, domain.OriginFail2Ban: 0}
	for origin, n := range snap.ActiveBansByOrigin(now) {
		byOrigin[origin] += n
	}
	for origin, n := range byOrigin {
		emit(descBansActive, prometheus.GaugeValue, float64(n), string(origin))
	}
	emit(descCooldowns, prometheus.GaugeValue, float64(cooling))
	emit(descBenched, prometheus.GaugeValue, float64(len(snap.Benched(now))))

	l := a.logHealth(snap)
	emit(descApplied, prometheus.GaugeValue, float64(l.AppliedSeq))
	emit(descLag, prometheus.GaugeValue, float64(l.Lag))
	emit(descSkipped, prometheus.CounterValue, float64(l.Skipped.UnknownKind), "unknown_kind")
	emit(descSkipped, prometheus.CounterValue, float64(l.Skipped.NewerVersion), "newer_version")
	emit(descSkipped, prometheus.CounterValue, float64(l.Skipped.Invalid), "invalid")
	connected := 0.0
	if l.Connected {
		connected = 1
	}
	emit(descConnected, prometheus.GaugeValue, connected)
	faulted := 0.0
	if l.StoreFault != "" {
		faulted = 1
	}
	emit(descStoreFault, prometheus.GaugeValue, faulted)
	if p := l.ServerProcess; p != nil {
		emit(descServerRestarts, prometheus.CounterValue, float64(p.Restarts))
	}
	emit(descMissing, prometheus.GaugeValue, float64(l.MissingEvents))
	emit(descPublished, prometheus.CounterValue, float64(l.Published))
	emit(descDropped, prometheus.CounterValue, float64(l.Dropped))
	emit(descFailed, prometheus.CounterValue, float64(l.Failed))
	for reason, n := range a.rejects() {
		emit(descRejected, prometheus.CounterValue, float64(n), reason)
	}
	emit(descLabelOverflow, prometheus.CounterValue, float64(a.labels.overflow.Load()))
	for kind, n := range a.unkept() {
		emit(descUnkept, prometheus.CounterValue, float64(n), kind)
	}
}
