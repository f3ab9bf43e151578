package main

import (
	"fmt"
	"io"
)

// cell is one figure of the side-by-side table: airouter's and the bare
// proxy's values and their ratio, as "0.82x (110 / 135 µs)".
func cell(a, b float64, unit string) string {
	return fmt.Sprintf("%s (%s / %s)", ratio(a, b), num(a, unit), num(b, unit))
}

// pairCell is two figures in one cell, as "1.00x / 0.89x (2.50 / 10.30 ms
// against 2.50 / 11.50 ms)".
func pairCell(a1, a2, b1, b2 float64, unit string) string {
	return fmt.Sprintf("%s / %s (%s / %s against %s / %s)", ratio(a1, b1), ratio(a2, b2),
		num(a1, unit), num(a2, unit), num(b1, unit), num(b2, unit))
}

// syscallCell is airouter's read and write system calls per request
// against the bare proxy's.
func syscallCell(x [3]measure) string {
	return pairCell(x[2].perRequest(x[2].reads), x[2].perRequest(x[2].writes),
		x[1].perRequest(x[1].reads), x[1].perRequest(x[1].writes), "/")
}

// summaryRows are the rows of the table for one run: the scenario
// and airouter against the bare proxy, latencies as what each adds to the
// direct run.
func summaryRows(r runResult) (names, cells []string) {
	add := func(name, c string) { names, cells = append(names, name), append(cells, c) }
	addedMs := func(f func(loadResult) float64, runs [3]measure, j int) float64 {
		return (f(runs[j].load) - f(runs[0].load)) / 1e3
	}
	first50 := func(l loadResult) float64 { return l.FirstP50 }
	first99 := func(l loadResult) float64 { return l.FirstP99 }
	p99 := func(l loadResult) float64 { return l.P99 }
	p999 := func(l loadResult) float64 { return l.P999 }
	for _, s := range r.scs {
		x := s.runs
		switch s.mode {
		case "closed":
			add("closed loop, CPU per request", cell(x[2].cpuPer(), x[1].cpuPer(), "µs"))
			add("closed loop, read / write syscalls per request", syscallCell(x))
		case "stream":
			add("SSE streams back to back, streams/s", cell(x[2].load.rps(), x[1].load.rps(), ""))
			add("SSE streams, CPU per stream", cell(x[2].cpuPer(), x[1].cpuPer(), "µs"))
			add("SSE streams, read / write syscalls per stream", syscallCell(x))
			add("SSE streams, added first byte p50 / p99", pairCell(addedMs(first50, x, 2), addedMs(first99, x, 2),
				addedMs(first50, x, 1), addedMs(first99, x, 1), "ms"))
		case "stream-rate":
			name := s.name()
			add(name+", CPU per stream", cell(x[2].cpuPer(), x[1].cpuPer(), "µs"))
			add(name+", added first byte p50 / p99", pairCell(addedMs(first50, x, 2), addedMs(first99, x, 2),
				addedMs(first50, x, 1), addedMs(first99, x, 1), "ms"))
		case "rate":
			name := s.name()
			add(name+", CPU per request", cell(x[2].cpuPer(), x[1].cpuPer(), "µs"))
			add(name+", added p99 / p99.9", pairCell(addedMs(p99, x, 2), addedMs(p999, x, 2),
				addedMs(p99, x, 1), addedMs(p999, x, 1), "ms"))
		}
	}
	add("peak RSS (VmHWM)", cell(r.rss[2], r.rss[1], "MB"))
	return names, cells
}

// writeBoth writes the ratios of a pinned and an unpinned run side by
// side, airouter over the bare proxy, each with its figures. A ratio is
// "-" where the bare proxy added nothing measurable (or airouter a
// negative latency): the direct run's noise there is larger than either.
func writeBoth(w io.Writer, pinned, unpinned runResult) {
	names, pc := summaryRows(pinned)
	_, uc := summaryRows(unpinned)
	fmt.Fprintf(w, "airouter / %s, pinned (%s) and unpinned (%s); %s:\n\n", pinned.floor, pinned.says, unpinned.says, pinned.idle)
	fmt.Fprintln(w, "| scenario | pinned | unpinned |")
	fmt.Fprintln(w, "|---|---|---|")
	for i, n := range names {
		u := "-"
		if i < len(uc) {
			u = uc[i]
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", n, pc[i], u)
	}
	for _, r := range []runResult{pinned, unpinned} {
		for _, s := range r.scs {
			for i, name := range targetNames {
				if got, sat := saturated(s, i); sat {
					u := s.perSecond()
					fmt.Fprintf(w, "%s: %s saturated at %d %s (%.0f %s), so its latencies there measure a queue\n",
						r.says, name, s.rate, u, got, u)
				}
			}
		}
	}
	writeRounds(w, []runResult{pinned, unpinned}, []string{"pinned", "unpinned"})
}
