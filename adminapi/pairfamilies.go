package adminapi

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/airouter/airouter/domain"
)

// The per-pair gauges are built as metric families, not collected as
// prometheus.Metric values: at 100,000 pairs they are 200,000 series, and
// the registry's path (a metric value and its label pairs made per series,
// sent over a channel, checked for duplicates by hashing, then sorted)
// took most of a scrape. Here the series come sorted from knownPairs,
// share one label pair per credential and per model, and are carved out
// of a few arrays; what the registry would refuse (a label value not
// valid UTF-8, a second series with the same labels) is left out as the
// registry leaves it out, so /metrics reads the same.
const (
	nameModelRPM  = "auto_ai_router_model_rpm_current"
	helpModelRPM  = "Requests in the last minute per credential and model."
	nameModelTPM  = "auto_ai_router_model_tpm_current"
	helpModelTPM  = "Tokens in the last minute per credential and model."
	namePairsOmit = "airouter_pairs_omitted"
	helpPairsOmit = "Pairs only the log names that /health and the per-pair gauges leave out (their usage is summed under model=\"other\")."
)

// scrapeGatherer is what /metrics serves: the registry's families and the
// per-pair ones (pairFamilies), in name order as the registry's are. The
// per-pair ones read the snapshot current after the registry's gauges
// did: at most the swaps of one scrape later.
type scrapeGatherer struct{ a *API }

func (g scrapeGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := g.a.registry.Gather()
	mfs = append(mfs, g.a.pairFamilies()...)
	slices.SortFunc(mfs, func(x, y *dto.MetricFamily) int { return strings.Compare(x.GetName(), y.GetName()) })
	return mfs, err
}

// pairUsage is one pair's row of the per-pair gauges.
type pairUsage struct {
	cred, model string
	rpm, tpm    int
}

// pairFamilies are the usage gauges of the pairs knownPairs shows (proxy
// credentials left out: a relay's load is its upstream's), the omitted
// pairs' usage summed per credential under model="other", and the count
// of omitted pairs, read from the current snapshot.
func (a *API) pairFamilies() []*dto.MetricFamily {
	shown, omitted := a.knownPairs(a.current(), a.now(), healthFilter{})
	byName := a.cf().byName
	rows := make([]pairUsage, 0, len(shown))
	var cred string
	proxy := false
	hasOther := map[string]bool{} // credentials with a pair named "other" shown
	for _, p := range shown {
		if p.Credential != cred { // shown is sorted by credential
			cred, proxy = p.Credential, byName[p.Credential].Type == domain.CredentialProxy
		}
		if proxy {
			continue
		}
		r := pairUsage{cred: p.Credential, model: p.Model}
		r.rpm, r.tpm = a.usage(p.Credential, p.Model)
		rows = append(rows, r)
		if p.Model == otherModel {
			hasOther[p.Credential] = true
		}
	}
	rows = append(rows, a.omittedUsage(omitted, hasOther)...)
	slices.SortStableFunc(rows, func(x, y pairUsage) int {
		return cmp.Or(strings.Compare(x.cred, y.cred), strings.Compare(x.model, y.model))
	})

	b := newFamilyBatch(len(rows))
	rpm, tpm := b.family(nameModelRPM, helpModelRPM, len(rows)), b.family(nameModelTPM, helpModelTPM, len(rows))
	for _, r := range rows {
		if !utf8.ValidString(r.cred) || !utf8.ValidString(r.model) {
			continue
		}
		labels := b.pair(r.cred, r.model)
		rpm.Metric = append(rpm.Metric, b.gauge(labels, float64(r.rpm)))
		tpm.Metric = append(tpm.Metric, b.gauge(labels, float64(r.tpm)))
	}
	omit := b.family(namePairsOmit, helpPairsOmit, 1)
	omit.Metric = append(omit.Metric, b.gauge(nil, float64(len(omitted))))
	out := []*dto.MetricFamily{omit}
	if len(rpm.Metric) > 0 {
		out = append(out, rpm, tpm)
	}
	return out
}

// omittedUsage sums the usage of the pairs left out past maxLogPairs per
// credential (proxy ones left out), one row under model="other" each;
// not for a credential that has a pair named "other" shown, whose row
// that is.
func (a *API) omittedUsage(omitted []domain.Key, hasOther map[string]bool) []pairUsage {
	byName := a.cf().byName
	sums := map[string]int{} // credential -> index in out
	var out []pairUsage
	for _, k := range omitted {
		if byName[k.Credential].Type == domain.CredentialProxy || hasOther[k.Credential] {
			continue
		}
		rpm, tpm := a.usage(k.Credential, k.Model)
		i, ok := sums[k.Credential]
		if !ok {
			i = len(out)
			sums[k.Credential] = i
			out = append(out, pairUsage{cred: k.Credential, model: otherModel})
		}
		out[i].rpm += rpm
		out[i].tpm += tpm
	}
	return out
}

// familyBatch makes the series of one scrape's per-pair families. It
// serves one scrape: the encoders only read what it made, so concurrent
// scrapes make their own.
type familyBatch struct {
	credName, modelName string
	gaugeType           dto.MetricType
	creds, models       map[string]*dto.LabelPair
	// lastCred is the credential label of the last pair (pairs come
	// sorted by credential, so most lookups are this one).
	lastCred *dto.LabelPair
	metrics  []dto.Metric
	gauges   []dto.Gauge
	values   []float64
	labels   []*dto.LabelPair
}

func newFamilyBatch(pairs int) *familyBatch {
	return &familyBatch{
		credName: "credential", modelName: "model", gaugeType: dto.MetricType_GAUGE,
		creds: map[string]*dto.LabelPair{}, models: map[string]*dto.LabelPair{},
		// Two series a pair, and the count of omitted pairs; used in
		// place, never copied.
		metrics: make([]dto.Metric, 2*pairs+1), gauges: make([]dto.Gauge, 2*pairs+1),
		values: make([]float64, 2*pairs+1), labels: make([]*dto.LabelPair, 2*pairs),
	}
}

// family is an empty gauge family with room for n series.
func (b *familyBatch) family(name, help string, n int) *dto.MetricFamily {
	return &dto.MetricFamily{Name: &name, Help: &help, Type: &b.gaugeType, Metric: make([]*dto.Metric, 0, n)}
}

// pair is the label slice {credential=cred, model=model}, in the label
// names' order, as the registry makes them.
func (b *familyBatch) pair(cred, model string) []*dto.LabelPair {
	if b.lastCred == nil || *b.lastCred.Value != cred {
		lp, ok := b.creds[cred]
		if !ok {
			lp = &dto.LabelPair{Name: &b.credName, Value: &cred}
			b.creds[cred] = lp
		}
		b.lastCred = lp
	}
	m, ok := b.models[model]
	if !ok {
		m = &dto.LabelPair{Name: &b.modelName, Value: &model}
		b.models[model] = m
	}
	s := b.labels[:2:2]
	b.labels = b.labels[2:]
	s[0], s[1] = b.lastCred, m
	return s
}

// gauge is a gauge series with labels and value v.
func (b *familyBatch) gauge(labels []*dto.LabelPair, v float64) *dto.Metric {
	m, g := &b.metrics[0], &b.gauges[0]
	b.values[0] = v
	g.Value = &b.values[0]
	m.Label, m.Gauge = labels, g
	b.metrics, b.gauges, b.values = b.metrics[1:], b.gauges[1:], b.values[1:]
	return m
}

// Registered with the collector's descriptors, so nothing else can take
// these names; the collector does not send them (pairFamilies builds them).
var (
	descModelRPM     = prometheus.NewDesc(nameModelRPM, helpModelRPM, []string{"credential", "model"}, nil)
	descModelTPM     = prometheus.NewDesc(nameModelTPM, helpModelTPM, []string{"credential", "model"}, nil)
	descPairsOmitted = prometheus.NewDesc(namePairsOmit, helpPairsOmit, nil, nil)
)
