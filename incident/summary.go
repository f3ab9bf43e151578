package incident

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/airouter/airouter/domain"
)

// summaries are the outcomes not yet written, per pair, all within one
// minute (late outcomes of an earlier minute join the open one).
type summaries struct {
	open   bool
	minute int64
	pairs  map[domain.Key]*summary
}

// summary is one pair's outcomes since its last summary line.
type summary struct {
	first     time.Time
	counts    map[string]int
	latencies []int64
}

func (s *summaries) add(ev domain.Event) {
	o := ev.Outcome
	if !s.open {
		s.open, s.minute = true, minute(ev.At)
	}
	k := o.Key()
	p := s.pairs[k]
	if p == nil {
		p = &summary{first: ev.At, counts: map[string]int{}}
		s.pairs[k] = p
	}
	p.counts[outcomeLabel(*o)]++
	p.latencies = append(p.latencies, o.LatencyMS)
}

// flushSummaries writes a line per pair with pending outcomes, ordered by
// credential then model, and empties the set.
func (t *Timeline) flushSummaries() {
	s := &t.sum
	if !s.open {
		return
	}
	keys := make([]domain.Key, 0, len(s.pairs))
	for k := range s.pairs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, domain.Key.Compare)
	for _, k := range keys {
		p := s.pairs[k]
		t.write(p.first, k.Credential, k.Model, p.text())
	}
	clear(s.pairs)
	s.open = false
}

// text is "120 ok, 3 x 429, 1 x timeout (p50 210 ms)": successes first,
// then statuses in order, then failures without a status.
func (p *summary) text() string {
	labels := make([]string, 0, len(p.counts))
	for l := range p.counts {
		labels = append(labels, l)
	}
	sort.Slice(labels, func(i, j int) bool { return labelLess(labels[i], labels[j]) })
	var b strings.Builder
	for i, l := range labels {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(p.counts[l]))
		if l == "ok" {
			b.WriteString(" ok")
			continue
		}
		b.WriteString(" x ")
		b.WriteString(l)
	}
	slices.Sort(p.latencies)
	b.WriteString(" (p50 ")
	b.WriteString(strconv.FormatInt(p.latencies[(len(p.latencies)-1)/2], 10))
	b.WriteString(" ms)")
	return b.String()
}

// labelLess orders "ok" first, then numeric statuses, then class names.
func labelLess(a, b string) bool {
	if a == "ok" || b == "ok" {
		return a == "ok" && b != "ok"
	}
	na, ea := strconv.Atoi(a)
	nb, eb := strconv.Atoi(b)
	switch {
	case ea == nil && eb == nil:
		return na < nb
	case ea == nil || eb == nil:
		return ea == nil
	}
	return a < b
}

// outcomeLabel names what an outcome was: "ok", its status ("429"), or for
// a failure without a status its class ("timeout", "connection").
func outcomeLabel(o domain.Outcome) string {
	switch {
	case o.Success():
		return "ok"
	case o.Class == domain.ClassEmptyCompletion:
		return "empty completion"
	case o.Class == domain.ClassCanceled:
		return "canceled"
	case o.Status > 0:
		return strconv.Itoa(o.Status)
	}
	return string(o.Class)
}
