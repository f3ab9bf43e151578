package main

import (
	"cmp"
	"io"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// What held a proxy's processors during an execution trace. On one
// processor the runtime looks for network events only once no goroutine
// is runnable (or from its monitor every 10 ms), so a request whose bytes
// arrive while goroutines keep the processor busy waits for that stretch
// to end, whatever the goroutines are. A stretch is a run of goroutine
// executions on one processor with gaps under stretchGap between them;
// holdReport counts the stretches over longStretch and says which kinds
// of goroutine filled them.

const (
	stretchGap  = 10 * time.Microsecond
	longStretch = time.Millisecond
	// longRun is the shortest run of one goroutine counted as long.
	longRun = 300 * time.Microsecond
)

// kind is a goroutine's part of the process, named by the function it
// started in; GC mark assists are a kind of their own, taken out of the
// goroutine that made them.
type kind int

const (
	kindRequests kind = iota
	kindTransport
	kindMarkWorker
	kindMarkAssist
	kindSweep
	kindNATSClient
	kindNATSServer
	kindAirouter
	kindTracer
	kindOther
	nKinds
)

var kindNames = [nKinds]string{
	kindRequests:   "requests (net/http server)",
	kindTransport:  "upstream connections (net/http client)",
	kindMarkWorker: "GC mark worker",
	kindMarkAssist: "GC mark assists",
	kindSweep:      "GC sweep and scavenge",
	kindNATSClient: "NATS client (acks, the fold)",
	kindNATSServer: "embedded nats-server",
	kindAirouter:   "airouter background (publisher, decisions, checks)",
	kindTracer:     "the execution trace itself",
	kindOther:      "other",
}

// kindOf classifies a goroutine by its start function.
func kindOf(fn string) kind {
	switch {
	case strings.HasPrefix(fn, "net/http.(*conn)"), strings.HasPrefix(fn, "net/http.(*connReader)"):
		return kindRequests
	case strings.HasPrefix(fn, "net/http.(*persistConn)"), strings.HasPrefix(fn, "net/http.(*Transport)"):
		return kindTransport
	case fn == "runtime.gcBgMarkWorker":
		return kindMarkWorker
	case fn == "runtime.bgsweep", fn == "runtime.bgscavenge":
		return kindSweep
	case strings.HasPrefix(fn, "runtime.(*traceAdvancerState)"), strings.HasPrefix(fn, "runtime.traceStartReadCPU"),
		strings.HasPrefix(fn, "runtime/trace."):
		return kindTracer
	case strings.HasPrefix(fn, "github.com/nats-io/nats-server/"):
		return kindNATSServer
	case strings.HasPrefix(fn, "github.com/nats-io/nats.go"), strings.HasPrefix(fn, "github.com/nats-io/nats%2ego"):
		return kindNATSClient
	case strings.HasPrefix(fn, "github.com/airouter/airouter/"):
		return kindAirouter
	}
	return kindOther
}

// kindStat is one kind's share of a trace.
type kindStat struct {
	running  time.Duration // all its runs
	longest  time.Duration // its longest run
	longFn   string        // the start function of the goroutine of that run
	longRuns int           // runs over longRun
	inLong   time.Duration // its running time inside stretches over longStretch
}

// holdReport is what one execution trace says.
type holdReport struct {
	span        time.Duration // from the trace's first event to its last
	stretches   int           // busy stretches over longStretch
	inStretches time.Duration // their summed length
	longest     time.Duration // the longest busy stretch
	kinds       [nKinds]kindStat
}

// piece is a stretch of one processor's time given to one kind, by a
// goroutine that started in fn.
type piece struct {
	proc       trace.ProcID
	start, end trace.Time
	kind       kind
	fn         string
}

// holdReader folds a trace's events into pieces of processor time.
type holdReader struct {
	fns     map[trace.GoID]string // start functions, which name the kinds
	running map[trace.GoID]piece  // the goroutines on a processor now
	// inSyscall is the goroutine in a system call on each processor.
	inSyscall map[trace.ProcID]trace.GoID
	assist    map[trace.GoID]trace.Time
	pieces    []piece
}

// analyzeTrace reads an execution trace (runtime/trace's format, as
// /debug/pprof/trace serves it) and reports what held the processors.
func analyzeTrace(r io.Reader) (holdReport, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return holdReport{}, err
	}
	h := &holdReader{fns: map[trace.GoID]string{}, running: map[trace.GoID]piece{}, inSyscall: map[trace.ProcID]trace.GoID{}, assist: map[trace.GoID]trace.Time{}}
	var first, last trace.Time
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return holdReport{}, err
		}
		if first == 0 {
			first = ev.Time()
		}
		last = ev.Time()
		h.event(ev)
	}
	for g, p := range h.running { // still running when the trace ended
		h.add(g, p, last)
	}
	return addUp(h.pieces, time.Duration(last-first)), nil
}

func (h *holdReader) event(ev trace.Event) {
	switch ev.Kind() {
	case trace.EventStateTransition:
		switch st := ev.StateTransition(); st.Resource.Kind {
		case trace.ResourceGoroutine:
			h.transition(ev, st)
		case trace.ResourceProc:
			if from, to := st.Proc(); from == trace.ProcRunning && to != trace.ProcRunning {
				h.procTaken(st.Resource.Proc(), ev.Time())
			}
		}
	case trace.EventRangeBegin, trace.EventRangeActive, trace.EventRangeEnd:
		if rg := ev.Range(); rg.Name == "GC mark assist" && rg.Scope.Kind == trace.ResourceGoroutine {
			h.markAssist(ev, rg.Scope.Goroutine(), ev.Kind() != trace.EventRangeEnd)
		}
	}
}

func (h *holdReader) transition(ev trace.Event, st trace.StateTransition) {
	g := st.Resource.Goroutine()
	from, to := st.Goroutine()
	if _, known := h.fns[g]; !known {
		// A goroutine created in the trace names its start in its own
		// stack; one that existed before names it as the outermost frame
		// of its stack when it stops running.
		fn := ""
		switch from {
		case trace.GoNotExist:
			fn = startFunc(st.Stack)
		case trace.GoRunning:
			fn = startFunc(ev.Stack())
		}
		if fn != "" {
			h.fns[g] = fn
		}
	}
	// A goroutine holds its processor while it runs and through its
	// system calls, until the runtime takes the processor back from a
	// blocked one (procTaken). A new generation of the trace restates a
	// running goroutine's state (Running to Running): its run goes on.
	p, on := h.running[g]
	if from == trace.GoSyscall && on && h.inSyscall[p.proc] == g {
		delete(h.inSyscall, p.proc)
	}
	switch {
	// A goroutine in a system call without a processor holds none: one
	// blocked since before the trace began.
	case holding(to) && !(to == trace.GoSyscall && ev.Proc() == trace.NoProc):
		if !on {
			p = piece{proc: ev.Proc(), start: ev.Time()}
			h.running[g] = p
		}
		if to == trace.GoSyscall {
			h.inSyscall[p.proc] = g
		}
	case on:
		h.end(g, ev.Time())
	}
}

// procTaken ends the run of a goroutine blocked in a system call when
// the runtime gives its processor to others.
func (h *holdReader) procTaken(proc trace.ProcID, at trace.Time) {
	if g, ok := h.inSyscall[proc]; ok {
		delete(h.inSyscall, proc)
		h.end(g, at)
	}
}

// end records g's run up to at.
func (h *holdReader) end(g trace.GoID, at trace.Time) {
	if p, ok := h.running[g]; ok {
		h.add(g, p, at)
		delete(h.running, g)
	}
}

// holding reports the states in which a goroutine holds a processor.
func holding(s trace.GoState) bool { return s == trace.GoRunning || s == trace.GoSyscall }

// markAssist starts or ends g's assist, splitting its running piece
// there. A new generation of the trace restates an assist under way
// (RangeActive): that changes nothing.
func (h *holdReader) markAssist(ev trace.Event, g trace.GoID, begins bool) {
	if _, assisting := h.assist[g]; assisting == begins {
		return
	}
	now := ev.Time()
	p, running := h.running[g]
	if running {
		h.add(g, p, now)
		h.running[g] = piece{proc: p.proc, start: now}
	}
	if begins {
		h.assist[g] = now
	} else {
		delete(h.assist, g)
	}
}

// add records g's running time on p's processor from p.start to end.
func (h *holdReader) add(g trace.GoID, p piece, end trace.Time) {
	if end <= p.start {
		return
	}
	k := kindOf(h.fns[g]) // other while its start is unknown
	if _, assisting := h.assist[g]; assisting {
		k = kindMarkAssist
	}
	h.pieces = append(h.pieces, piece{proc: p.proc, start: p.start, end: end, kind: k, fn: h.fns[g]})
}

// startFunc is the outermost function of a goroutine's stack but the
// runtime's goexit.
func startFunc(st trace.Stack) string {
	fn := ""
	for f := range st.Frames() {
		if !strings.HasPrefix(f.Func, "runtime.goexit") {
			fn = f.Func
		}
	}
	return fn
}

// addUp adds the pieces up by kind and into busy stretches, each
// processor's own.
func addUp(pieces []piece, span time.Duration) holdReport {
	rep := holdReport{span: span}
	for _, p := range pieces {
		d := time.Duration(p.end - p.start)
		ks := &rep.kinds[p.kind]
		ks.running += d
		if d > ks.longest {
			ks.longest, ks.longFn = d, p.fn
		}
		if d > longRun {
			ks.longRuns++
		}
	}
	slices.SortFunc(pieces, func(a, b piece) int {
		if a.proc != b.proc {
			return cmp.Compare(a.proc, b.proc)
		}
		return cmp.Compare(a.start, b.start)
	})
	for i := 0; i < len(pieces); {
		start, end, j := pieces[i].start, pieces[i].end, i+1
		for ; j < len(pieces) && pieces[j].proc == pieces[i].proc && time.Duration(pieces[j].start-end) < stretchGap; j++ {
			end = max(end, pieces[j].end)
		}
		if d := time.Duration(end - start); d > longStretch {
			rep.stretches++
			rep.inStretches += d
			rep.longest = max(rep.longest, d)
			for _, p := range pieces[i:j] {
				rep.kinds[p.kind].inLong += time.Duration(p.end - p.start)
			}
		}
		i = j
	}
	return rep
}
