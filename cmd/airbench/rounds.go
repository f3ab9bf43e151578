package main

import (
	"fmt"
	"io"
	"math"
	"slices"
)

// The medians of the rounds compare figures taken minutes apart on a
// machine whose speed drifts. Round by round, the bare proxy and airouter
// ran seconds apart, so each round is one paired comparison, and the
// split of the rounds says whether a difference is more than the drift:
// the sign test's p is the chance of a split at least that uneven were
// either proxy as likely as the other to come out lower.

// figure is one figure compared round by round and how a run gives it.
// A CPU or throughput figure also shows the median of the rounds' ratios
// (ratioed); a latency's ratio would be of what each proxy adds to a
// direct run of its own round, too noisy a difference to divide by.
type figure struct {
	name    string
	of      func(measure) float64
	ratioed bool
	// more is for a figure where more is better (throughput): its cell
	// counts the rounds in which airouter's was higher.
	more bool
}

// scenarioFigures are the figures of s compared round by round.
func scenarioFigures(s scenario) []figure {
	cpu := func(m measure) float64 { return m.cpuPer() }
	lat := func(f func(loadResult) float64) func(measure) float64 {
		return func(m measure) float64 { return f(m.load) }
	}
	switch s.mode {
	case "closed":
		return []figure{{name: "closed loop, CPU per request", of: cpu, ratioed: true}}
	case "stream":
		// Back to back the loop is closed: a proxy that gets streams
		// through faster starts the next ones sooner, and its first bytes
		// then wait in a busier processor's queue. The streams a second
		// say which proxy the first bytes were measured under more load.
		return []figure{
			{name: "SSE streams back to back, streams/s", of: func(m measure) float64 { return m.load.rps() }, ratioed: true, more: true},
			{name: "SSE streams, CPU per stream", of: cpu, ratioed: true},
			{name: "SSE streams, first byte p50", of: lat(func(l loadResult) float64 { return l.FirstP50 })},
			{name: "SSE streams, first byte p99", of: lat(func(l loadResult) float64 { return l.FirstP99 })},
		}
	case "stream-rate":
		name := s.name() + ", "
		return []figure{
			{name: name + "CPU per stream", of: cpu, ratioed: true},
			{name: name + "first byte p50", of: lat(func(l loadResult) float64 { return l.FirstP50 })},
			{name: name + "first byte p99", of: lat(func(l loadResult) float64 { return l.FirstP99 })},
		}
	}
	name := s.name() + ", "
	return []figure{
		{name: name + "CPU per request", of: cpu, ratioed: true},
		{name: name + "p99", of: lat(func(l loadResult) float64 { return l.P99 })},
		{name: name + "p99.9", of: lat(func(l loadResult) float64 { return l.P999 })},
	}
}

// paired is a figure compared round by round: in how many rounds
// airouter's was lower than the bare proxy's and in how many higher
// (a tie is neither), the median of the rounds' ratios (airouter over
// bare; NaN when not asked for) and the sign test's two-sided p.
type paired struct {
	lower, higher int
	ratio, p      float64
}

// pairRounds compares bare's and airouter's rounds of one figure; a round
// in which either has no figure (no request answered) is left out.
func pairRounds(bare, air []measure, f figure) paired {
	out := paired{ratio: math.NaN()}
	var ratios []float64
	for i := range min(len(bare), len(air)) {
		b, a := f.of(bare[i]), f.of(air[i])
		if math.IsNaN(a) || math.IsNaN(b) {
			continue
		}
		switch {
		case a < b:
			out.lower++
		case a > b:
			out.higher++
		}
		if f.ratioed && b > 0 {
			ratios = append(ratios, a/b)
		}
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		out.ratio = ratios[len(ratios)/2]
	}
	out.p = signTest(out.lower, out.lower+out.higher)
	return out
}

// signTest is the two-sided p of k successes in n fair coin flips: twice
// the smaller tail, at most 1.
func signTest(k, n int) float64 {
	if n == 0 {
		return 1
	}
	k = min(k, n-k)
	tail, c := 0.0, 1.0 // c is n choose i
	for i := 0; i <= k; i++ {
		tail += c
		c = c * float64(n-i) / float64(i+1)
	}
	return min(1, 2*tail/math.Pow(2, float64(n)))
}

// String is the cell of a paired figure, as "lower in 12 of 15 rounds,
// median ratio 0.93x, p 0.035".
func (p paired) String() string { return p.cell(false) }

// cell is the paired figure's cell, counting the rounds in which
// airouter's was higher when more is, as "higher in 13 of 15 rounds".
func (p paired) cell(more bool) string {
	s := fmt.Sprintf("lower in %d of %d rounds", p.lower, p.lower+p.higher)
	if more {
		s = fmt.Sprintf("higher in %d of %d rounds", p.higher, p.lower+p.higher)
	}
	if !math.IsNaN(p.ratio) {
		s += fmt.Sprintf(", median ratio %.2fx", p.ratio)
	}
	return s + fmt.Sprintf(", p %.3f", p.p)
}

// roundRows are the round-by-round rows of one run: each figure's name
// and its cell.
func roundRows(r runResult) (names, cells []string) {
	for _, s := range r.scs {
		for _, f := range scenarioFigures(s) {
			names = append(names, f.name)
			cells = append(cells, pairRounds(s.rounds[1], s.rounds[2], f).cell(f.more))
		}
	}
	return names, cells
}

// writeRounds writes the round-by-round comparison of the runs (one
// column each, headed by its name) when they had more than one round.
func writeRounds(w io.Writer, runs []runResult, heads []string) {
	if len(runs) == 0 || len(runs[0].scs) == 0 || len(runs[0].scs[0].rounds[1]) < 2 {
		return
	}
	fmt.Fprintln(w, "\nRound by round: airouter against the bare proxy of the same round (the two take turns going first);")
	fmt.Fprintln(w, "p is the sign test's, the chance of a split at least as uneven were neither proxy the faster:")
	fmt.Fprintln(w)
	var names []string
	cols := make([][]string, len(runs))
	for i, r := range runs {
		ns, cells := roundRows(r)
		if i == 0 {
			names = ns
		}
		cols[i] = cells
	}
	fmt.Fprint(w, "| figure |")
	for _, h := range heads {
		fmt.Fprintf(w, " %s |", h)
	}
	fmt.Fprint(w, "\n|---|")
	for range heads {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	for i, n := range names {
		fmt.Fprintf(w, "| %s |", n)
		for _, c := range cols {
			cell := "-"
			if i < len(c) {
				cell = c[i]
			}
			fmt.Fprintf(w, " %s |", cell)
		}
		fmt.Fprintln(w)
	}
}
