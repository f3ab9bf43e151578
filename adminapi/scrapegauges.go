package adminapi

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gaugeBatch makes the per-credential and per-pair gauges of one scrape.
// prometheus.NewConstMetric allocates a label slice, its label pairs and
// their strings, and checks them, for each series: at 100,000 pairs that
// is 200,000 series and most of a scrape's allocations. A batch shares one
// label pair per credential and per model, one label slice per pair (the
// pair's rpm and tpm gauges read the same), and carves the gauges and the
// slices out of a few large arrays. The registry still checks every
// series (names, label values valid UTF-8, no duplicates) as it gathers.
// A batch serves one scrape: the registry and the encoders only read what
// it made, so concurrent scrapes make their own.
type gaugeBatch struct {
	credName, modelName string
	creds, models       map[string]*dto.LabelPair
	// lastCred is the credential label of the last pair (pairs come
	// sorted by credential, so most lookups are this one).
	lastCred  *dto.LabelPair
	gauges    []batchGauge
	labelRefs []*dto.LabelPair
}

// batchChunk is how many gauges (and label slots) one array holds.
const batchChunk = 4096

// batchGauge is one gauge series. It is made in place in the batch's
// array and used through its address, never copied.
type batchGauge struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	value  float64
	gauge  dto.Gauge
}

func (g *batchGauge) Desc() *prometheus.Desc { return g.desc }

// Write fills m with the gauge: m keeps references to the batch's label
// pairs and value, which nothing changes after the gauge is sent.
func (g *batchGauge) Write(m *dto.Metric) error {
	m.Label = g.labels
	m.Gauge = &g.gauge
	return nil
}

func newGaugeBatch() *gaugeBatch {
	return &gaugeBatch{
		credName: "credential", modelName: "model",
		creds: map[string]*dto.LabelPair{}, models: map[string]*dto.LabelPair{},
	}
}

// credential is the label slice {credential=name}.
func (b *gaugeBatch) credential(name string) []*dto.LabelPair {
	s := b.slots(1)
	s[0] = b.credPair(name)
	return s
}

// pair is the label slice {credential=cred, model=model}, in the label
// names' order as the registry wants them.
func (b *gaugeBatch) pair(cred, model string) []*dto.LabelPair {
	s := b.slots(2)
	s[0] = b.credPair(cred)
	lp, ok := b.models[model]
	if !ok {
		lp = &dto.LabelPair{Name: &b.modelName, Value: &model}
		b.models[model] = lp
	}
	s[1] = lp
	return s
}

func (b *gaugeBatch) credPair(name string) *dto.LabelPair {
	if b.lastCred != nil && *b.lastCred.Value == name {
		return b.lastCred
	}
	lp, ok := b.creds[name]
	if !ok {
		lp = &dto.LabelPair{Name: &b.credName, Value: &name}
		b.creds[name] = lp
	}
	b.lastCred = lp
	return lp
}

// slots are n label slots of the batch's current array, capped so that
// nothing appends into the next slice's.
func (b *gaugeBatch) slots(n int) []*dto.LabelPair {
	if len(b.labelRefs) < n {
		b.labelRefs = make([]*dto.LabelPair, batchChunk)
	}
	s := b.labelRefs[:n:n]
	b.labelRefs = b.labelRefs[n:]
	return s
}

// gauge is a gauge series of d with labels (made by credential or pair,
// in d's label order) and value v.
func (b *gaugeBatch) gauge(d *prometheus.Desc, labels []*dto.LabelPair, v float64) prometheus.Metric {
	if len(b.gauges) == 0 {
		b.gauges = make([]batchGauge, batchChunk)
	}
	g := &b.gauges[0]
	b.gauges = b.gauges[1:]
	g.desc, g.labels, g.value = d, labels, v
	g.gauge.Value = &g.value
	return g
}
