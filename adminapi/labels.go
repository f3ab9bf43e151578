package adminapi

import (
	"sync"
	"sync/atomic"

	"github.com/airouter/airouter/domain"
)

// Bounds on what client-chosen model names can make the operators' surface
// hold. In a config that lists no models every name a client sends is
// routed, logged and shown, so without them 20,000 invented names grow
// /metrics to tens of thousands of series and /health to megabytes, and
// keep them after a restart (the log names the pairs).
const (
	// maxModelLabels bounds the model label values, beyond the models
	// config routes and "*", that the counters with a model label
	// (requests, tokens, aborted answers, bans, unbans, cooldowns,
	// benches) carry: about 1,000 names keep a scrape of a few
	// credentials well under a megabyte, more than any real deployment
	// serves without listing them. Names
	// past it are counted under model="other" and in
	// airouter_metric_model_labels_overflow_total.
	maxModelLabels = 1000
	// maxLogPairs bounds the pairs /health and the per-pair gauges show
	// beyond the configured and learned ones, those the log alone names:
	// banned or cooling ones first, then by credential and model. The
	// rest are counted in /health's models_omitted, and their usage is
	// summed per credential under model="other".
	maxLogPairs = 1000
	// otherModel is the label value past maxModelLabels and maxLogPairs.
	otherModel = "other"
)

// modelLabels hands out model label values within maxModelLabels. It is
// safe for concurrent use and cheap on the proxy's hot path: a configured
// or already admitted name is one map read.
type modelLabels struct {
	// configured are the models config routes, on any credential.
	configured map[string]bool
	admitted   sync.Map // model name -> struct{}
	count      atomic.Int64
	overflow   atomic.Uint64
}

func newModelLabels(pairs []Pair) *modelLabels {
	l := &modelLabels{configured: make(map[string]bool, len(pairs))}
	for _, p := range pairs {
		l.configured[p.Model] = true
	}
	return l
}

// label is the model label value for model: the name itself while it is
// configured, "*", or one of the first maxModelLabels other names seen,
// else otherModel (counted).
func (l *modelLabels) label(model string) string {
	if model == domain.AllModels || l.configured[model] {
		return model
	}
	if _, ok := l.admitted.Load(model); ok {
		return model
	}
	if l.count.Add(1) <= maxModelLabels {
		if _, loaded := l.admitted.LoadOrStore(model, struct{}{}); loaded {
			l.count.Add(-1)
		}
		return model
	}
	l.count.Add(-1)
	l.overflow.Add(1)
	return otherModel
}

// routed reports whether config routes model (or it is "*"): its series
// stay when a ban on it is lifted.
func (l *modelLabels) routed(model string) bool {
	return model == domain.AllModels || l.configured[model]
}
