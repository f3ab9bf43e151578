package main

import (
	"fmt"
	"io"
	"math"
	"slices"
)

// scenario is one kind of traffic; measure is what one target did in it.
type scenario struct {
	mode string
	rate int
	runs [3]measure // direct, bare, airouter: the medians of the rounds
	// rounds are every round's runs, for the round-by-round comparison.
	rounds [3][]measure
}

type measure struct {
	load loadResult
	// cpu is the target process's CPU seconds over the run (for direct,
	// the upstream's); reads and writes its read and write system calls.
	cpu, reads, writes float64
}

// perRequest is n over the run's requests (or streams).
func (m measure) perRequest(n float64) float64 {
	if m.load.Requests == 0 {
		return math.NaN()
	}
	return n / float64(m.load.Requests)
}

// cpuPer is the CPU per request (or stream) in µs.
func (m measure) cpuPer() float64 {
	if m.load.Requests == 0 {
		return math.NaN()
	}
	return m.cpu / float64(m.load.Requests) * 1e6
}

// runScenarios runs every scenario against the targets (direct, bare,
// airouter) back to back, so the three runs of a scenario are seconds
// apart on a machine whose speed drifts, o.rounds times, and keeps every
// round and the medians. The proxies take turns going first (roundOrder),
// so a drift within a round favours neither.
func runScenarios(o options, gen *proc, targets []*proc) ([]scenario, error) {
	scs := []scenario{{mode: "closed"}, {mode: "stream"}}
	if o.streamRate > 0 {
		scs = append(scs, scenario{mode: "stream-rate", rate: o.streamRate})
	}
	for _, r := range o.rates {
		scs = append(scs, scenario{mode: "rate", rate: r})
	}
	for i := range scs {
		s := &scs[i]
		for round := range o.rounds {
			for _, j := range roundOrder(round) {
				t := targets[j]
				c0 := t.cpu()
				r0, w0 := t.syscalls()
				r, err := gen.load(loadCmd{Mode: s.mode, URL: t.url, Conns: o.conns, Rate: s.rate, Seconds: o.duration.Seconds()})
				if err != nil {
					return nil, err
				}
				r1, w1 := t.syscalls()
				s.rounds[j] = append(s.rounds[j], measure{load: r, cpu: t.cpu() - c0, reads: r1 - r0, writes: w1 - w0})
			}
		}
		for j := range s.rounds {
			s.runs[j] = medianOf(s.rounds[j])
		}
	}
	return scs, nil
}

// roundOrder is the order of the targets (indexes into targetNames) in a
// round: direct first, then the bare proxy and airouter, the two proxies
// swapping places every round.
func roundOrder(round int) [3]int {
	if round%2 == 1 {
		return [3]int{0, 2, 1}
	}
	return [3]int{0, 1, 2}
}

// medianOf is the run whose every figure is the median of the rounds'
// (each figure on its own; errors are summed).
func medianOf(ms []measure) measure {
	med := func(f func(measure) float64) float64 {
		xs := make([]float64, len(ms))
		for i, m := range ms {
			xs[i] = f(m)
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	out := measure{load: loadResult{Seconds: 1}}
	out.load.Requests = int64(med(func(m measure) float64 { return m.load.rps() }))
	out.cpu = med(func(m measure) float64 { return m.cpuPer() }) * float64(out.load.Requests) / 1e6
	out.reads = med(func(m measure) float64 { return m.perRequest(m.reads) }) * float64(out.load.Requests)
	out.writes = med(func(m measure) float64 { return m.perRequest(m.writes) }) * float64(out.load.Requests)
	out.load.P50 = med(func(m measure) float64 { return m.load.P50 })
	out.load.P99 = med(func(m measure) float64 { return m.load.P99 })
	out.load.P999 = med(func(m measure) float64 { return m.load.P999 })
	out.load.FirstP50 = med(func(m measure) float64 { return m.load.FirstP50 })
	out.load.FirstP99 = med(func(m measure) float64 { return m.load.FirstP99 })
	for _, m := range ms {
		out.load.Errors += m.load.Errors
	}
	return out
}

// writeTable writes the table: for latency rows the direct column
// is absolute and the proxies' are what they add to it.
func writeTable(w io.Writer, floor string, scs []scenario, rss [3]float64, genRSS float64) {
	fmt.Fprintf(w, "| scenario | direct | %s | airouter | ratio |\n", floor)
	fmt.Fprintln(w, "|---|---|---|---|---|")
	row := func(name, unit string, d, b, a float64) {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", name, num(d, unit), num(b, unit), num(a, unit), ratio(a, b))
	}
	added := func(name string, f func(loadResult) float64, runs [3]measure) {
		d := f(runs[0].load)
		row(name+" (added)", "ms", d/1e3, (f(runs[1].load)-d)/1e3, (f(runs[2].load)-d)/1e3)
	}
	for _, s := range scs {
		r := s.runs
		switch s.mode {
		case "closed":
			row("closed loop, req/s", "", r[0].load.rps(), r[1].load.rps(), r[2].load.rps())
			row("closed loop, CPU per request", "µs", math.NaN(), r[1].cpuPer(), r[2].cpuPer())
			syscallRows(row, "closed loop", r)
		case "stream":
			row("SSE streams back to back, streams/s", "", r[0].load.rps(), r[1].load.rps(), r[2].load.rps())
			row("SSE streams (20 chunks 1 ms apart), CPU per stream", "µs", math.NaN(), r[1].cpuPer(), r[2].cpuPer())
			syscallRows(row, "SSE streams", r)
			added("SSE streams, first byte p50", func(l loadResult) float64 { return l.FirstP50 }, r)
			added("SSE streams, first byte p99", func(l loadResult) float64 { return l.FirstP99 }, r)
		case "stream-rate":
			name := s.name()
			row(name+", achieved streams/s", "", r[0].load.rps(), r[1].load.rps(), r[2].load.rps())
			row(name+", CPU per stream", "µs", math.NaN(), r[1].cpuPer(), r[2].cpuPer())
			added(name+", first byte p50", func(l loadResult) float64 { return l.FirstP50 }, r)
			added(name+", first byte p99", func(l loadResult) float64 { return l.FirstP99 }, r)
		case "rate":
			name := s.name()
			row(name+", achieved req/s", "", r[0].load.rps(), r[1].load.rps(), r[2].load.rps())
			added(name+", p50", func(l loadResult) float64 { return l.P50 }, r)
			added(name+", p99", func(l loadResult) float64 { return l.P99 }, r)
			added(name+", p99.9", func(l loadResult) float64 { return l.P999 }, r)
			row(name+", CPU per request", "µs", math.NaN(), r[1].cpuPer(), r[2].cpuPer())
		}
	}
	row("peak RSS (VmHWM; direct: the upstream)", "MB", rss[0], rss[1], rss[2])
	fmt.Fprintf(w, "\nload generator peak RSS %.1f MB\n", genRSS)
	for _, s := range scs {
		for i, name := range targetNames {
			if got, sat := saturated(s, i); sat {
				u := s.perSecond()
				fmt.Fprintf(w, "%s at %d %s: saturated at %.0f %s, so its latencies there measure a queue\n", name, s.rate, u, got, u)
			}
			if n := s.runs[i].load.Errors; n > 0 {
				fmt.Fprintf(w, "%s %s %d: %d failed requests\n", name, s.mode, s.rate, n)
			}
		}
	}
}

// syscallRows are a scenario's read and write system calls per request:
// for direct, the upstream's; for the proxies, each proxy's own.
func syscallRows(row func(name, unit string, d, b, a float64), name string, r [3]measure) {
	row(name+", read syscalls per request", "/", r[0].perRequest(r[0].reads), r[1].perRequest(r[1].reads), r[2].perRequest(r[2].reads))
	row(name+", write syscalls per request", "/", r[0].perRequest(r[0].writes), r[1].perRequest(r[1].writes), r[2].perRequest(r[2].writes))
}

// name names an open loop's scenario by its rate, in every table.
func (s scenario) name() string {
	if s.mode == "stream-rate" {
		return fmt.Sprintf("SSE streams at %d/s", s.rate)
	}
	return fmt.Sprintf("fixed %d req/s", s.rate)
}

// perSecond is the unit of the scenario's rate: streams or requests a second.
func (s scenario) perSecond() string {
	if s.mode == "stream-rate" {
		return "streams/s"
	}
	return "req/s"
}

// targetNames name the targets of a scenario's runs, in order.
var targetNames = [3]string{"direct", "bare", "airouter"}

// saturated reports whether target i could not keep scenario s's fixed
// rate (within 5 %), and the rate it reached.
func saturated(s scenario, i int) (float64, bool) {
	got := s.runs[i].load.rps()
	return got, s.rate > 0 && got < 0.95*float64(s.rate)
}

func num(x float64, unit string) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case unit == "":
		return fmt.Sprintf("%.0f", x)
	case unit == "ms":
		return fmt.Sprintf("%.2f ms", x)
	case unit == "/":
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.1f %s", x, unit)
}

// ratio is airouter's over bare's, "-" when either is negative or bare's
// is 0 (an added latency within the noise of the direct run).
func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b <= 0 || a < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}
