package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// traceLead is how long a trace starts after its open loop was asked for
// and how long the loop runs on past the trace's end.
const traceLead = 500 * time.Millisecond

// traceHolds runs the first rate's open loop once more against the bare
// proxy and airouter, one after the other, taking an execution trace of
// o.trace from each while it runs.
func traceHolds(o options, gen *proc, targets ...*proc) ([]holdReport, error) {
	var out []holdReport
	for _, t := range targets {
		rep, err := traceHold(o, gen, t)
		if err != nil {
			return nil, fmt.Errorf("trace of %s: %w", t.name, err)
		}
		out = append(out, rep)
	}
	return out, nil
}

func traceHold(o options, gen, target *proc) (holdReport, error) {
	if target.traceURL == "" {
		return holdReport{}, fmt.Errorf("it serves no trace")
	}
	type result struct {
		trace []byte
		err   error
	}
	got := make(chan result, 1)
	go func() {
		time.Sleep(traceLead)
		b, err := fetchTrace(target.traceURL, o.trace)
		got <- result{b, err}
	}()
	_, loadErr := gen.load(loadCmd{Mode: "rate", URL: target.url, Conns: o.conns, Rate: o.rates[0],
		Seconds: (o.trace + 2*traceLead).Seconds()})
	r := <-got
	switch {
	case loadErr != nil:
		return holdReport{}, loadErr
	case r.err != nil:
		return holdReport{}, r.err
	}
	// Read once the load has ended: this process is not pinned, and
	// parsing during the run would compete with the proxies.
	return analyzeTrace(bytes.NewReader(r.trace))
}

// fetchTrace asks url for an execution trace of d.
func fetchTrace(url string, d time.Duration) ([]byte, error) {
	c := &http.Client{Timeout: d + 30*time.Second}
	resp, err := c.Get(url + "/debug/pprof/trace?seconds=" + strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/debug/pprof/trace: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// writeHolds prints the two traces side by side: the busy stretches over
// longStretch, and for every kind of goroutine that ran, its running
// time a second, its longest run and its time in those stretches.
func writeHolds(w io.Writer, o options, floor string, holds []holdReport) {
	fmt.Fprintf(w, "\nWhat held the processors: an execution trace of %v of each proxy at %d req/s. A busy stretch is goroutines\n"+
		"running back to back on one processor with gaps under %v: on one processor the runtime does not look for new\n"+
		"requests until it ends (but for the mark worker's idle runs, which give way to them). A run is one goroutine's\n"+
		"time on a processor, its system calls and the kernel's preemptions of it included.\n"+
		"Per kind of goroutine: its running time a second, its longest run, and its time in the stretches over %v.\n\n",
		o.trace, o.rates[0], stretchGap, longStretch)
	fmt.Fprintf(w, "| | %s | airouter |\n", floor)
	fmt.Fprintln(w, "|---|---|---|")
	cells := func(f func(h holdReport) string) string {
		s := ""
		for _, h := range holds {
			s += " " + f(h) + " |"
		}
		return s
	}
	fmt.Fprintf(w, "| busy stretches over %v: count, share of the time |%s\n", longStretch, cells(func(h holdReport) string {
		return fmt.Sprintf("%d, %.2f %%", h.stretches, 100*h.inStretches.Seconds()/max(h.span.Seconds(), 1e-9))
	}))
	fmt.Fprintf(w, "| the longest busy stretch |%s\n", cells(func(h holdReport) string { return ms(h.longest) }))
	for k := range nKinds {
		ran := false
		for _, h := range holds {
			ran = ran || h.kinds[k].running > 0
		}
		if !ran {
			continue
		}
		fmt.Fprintf(w, "| %s |%s\n", kindNames[k], cells(func(h holdReport) string {
			ks := h.kinds[k]
			longest := ms(ks.longest)
			if namesItsRun(k) && ks.longFn != "" {
				longest += " (" + shortFunc(ks.longFn) + ")"
			}
			return fmt.Sprintf("%s/s, %s, %s", ms(time.Duration(float64(ks.running)/max(h.span.Seconds(), 1e-9))), longest, ms(ks.inLong))
		}))
	}
}

// ms is d in milliseconds with two decimals.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + " ms"
}

// namesItsRun reports the kinds of many different goroutines, whose
// longest run the table names.
func namesItsRun(k kind) bool {
	return k == kindNATSServer || k == kindNATSClient || k == kindAirouter || k == kindOther
}

// shortFunc is fn without the host of its module's path.
func shortFunc(fn string) string {
	fn = strings.Replace(fn, "nats%2ego", "nats.go", 1)
	for _, prefix := range []string{"github.com/airouter/airouter/", "github.com/nats-io/"} {
		if rest, ok := strings.CutPrefix(fn, prefix); ok {
			return rest
		}
	}
	return fn
}
