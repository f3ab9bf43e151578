package adminapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// Series labelled by a credential and a model config does not route
// describe something the log's state keeps: a ban, or the pair's record.
// When the fold lets go of it (a ban ends, or the pair's record is dropped
// to keep the credential's records bounded, projections.Change.Dropped),
// the series go too, so names clients invent do not stay in /metrics. A
// routed model's series stay: config names it, so they are bounded.

// forgetSeries deletes the series of vecs labelled with k's credential and
// model, unless config routes the model (or it is the overflow label).
func (m *Metrics) forgetSeries(k domain.Key, vecs ...*prometheus.CounterVec) {
	if m.labels.routed(k.Model) || k.Model == otherModel {
		return
	}
	labels := prometheus.Labels{"credential": k.Credential, "model": k.Model}
	for _, v := range vecs {
		v.DeletePartialMatch(labels)
	}
}

// pairsDropped deletes every series labelled by a pair the fold dropped:
// attempts, tokens, aborted answers, bans, cooldowns and shadow bans.
func (m *Metrics) pairsDropped(drops []projections.PairDrop) {
	for _, d := range drops {
		m.forgetSeries(d.Key, m.requests, m.bans, m.cooldowns, m.guards.shadow,
			m.usage.input, m.usage.output, m.usage.reasoning, m.usage.cached, m.usage.aborted)
	}
}
