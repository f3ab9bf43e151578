package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	rtrace "runtime/trace"
	"strings"
	"testing"
	"time"

	"golang.org/x/exp/trace"
)

func TestKindOf(t *testing.T) {
	for fn, want := range map[string]kind{
		"net/http.(*conn).serve":                                           kindRequests,
		"net/http.(*connReader).backgroundRead":                            kindRequests,
		"net/http.(*persistConn).readLoop":                                 kindTransport,
		"net/http.(*persistConn).writeLoop":                                kindTransport,
		"runtime.gcBgMarkWorker":                                           kindMarkWorker,
		"runtime.bgsweep":                                                  kindSweep,
		"runtime.bgscavenge":                                               kindSweep,
		"github.com/nats-io/nats%2ego.(*Conn).waitForMsgs":                 kindNATSClient,
		"github.com/nats-io/nats.go.(*Conn).readLoop":                      kindNATSClient,
		"github.com/nats-io/nats-server/v2/server.(*stream).internalLoop":  kindNATSServer,
		"github.com/airouter/airouter/transport/eventlog.(*publisher).run": kindAirouter,
		"runtime.(*traceAdvancerState).start.func1":                        kindTracer,
		"main.main": kindOther,
	} {
		if got := kindOf(fn); got != want {
			t.Errorf("kindOf(%q) = %s, want %s", fn, kindNames[got], kindNames[want])
		}
	}
}

func TestShortFunc(t *testing.T) {
	for fn, want := range map[string]string{
		"github.com/nats-io/nats%2ego.(*Conn).waitForMsgs":                 "nats.go.(*Conn).waitForMsgs",
		"github.com/nats-io/nats-server/v2/server.(*stream).internalLoop":  "nats-server/v2/server.(*stream).internalLoop",
		"github.com/airouter/airouter/transport/eventlog.(*publisher).run": "transport/eventlog.(*publisher).run",
		"runtime.bgsweep": "runtime.bgsweep",
	} {
		if got := shortFunc(fn); got != want {
			t.Errorf("shortFunc(%q) = %q, want %q", fn, got, want)
		}
	}
}

// addUp merges each processor's pieces with gaps under stretchGap into
// stretches, never across processors, and counts those over
// longStretch with what filled them.
func TestAddUpStretches(t *testing.T) {
	us := func(n int) trace.Time { return trace.Time(n * int(time.Microsecond)) }
	pieces := []piece{
		// processor 1: 600 µs of requests, a 5 µs gap, 600 µs of sweep: one
		// stretch of 1.205 ms.
		{proc: 1, start: us(0), end: us(600), kind: kindRequests},
		{proc: 1, start: us(605), end: us(1205), kind: kindSweep, fn: "runtime.bgsweep"},
		// processor 1 again after a 20 µs gap: a stretch of its own, short.
		{proc: 1, start: us(1225), end: us(1725), kind: kindRequests},
		// processor 2 overlaps processor 1's stretch: not merged into it.
		{proc: 2, start: us(610), end: us(1000), kind: kindMarkWorker},
	}
	rep := addUp(pieces, time.Second)
	if rep.stretches != 1 || rep.longest != 1205*time.Microsecond || rep.inStretches != rep.longest {
		t.Fatalf("%d stretches, longest %v, %v in them; want 1 of 1.205ms", rep.stretches, rep.longest, rep.inStretches)
	}
	if got := rep.kinds[kindRequests]; got.running != 1100*time.Microsecond || got.inLong != 600*time.Microsecond || got.longRuns != 2 {
		t.Errorf("requests %+v: want 1.1ms running, 600µs in the stretch, 2 runs over %v", got, longRun)
	}
	if got := rep.kinds[kindSweep]; got.inLong != 600*time.Microsecond || got.longFn != "runtime.bgsweep" {
		t.Errorf("sweep %+v: want 600µs in the stretch, its longest run by runtime.bgsweep", got)
	}
	if got := rep.kinds[kindMarkWorker]; got.inLong != 0 || got.running != 390*time.Microsecond {
		t.Errorf("the other processor's mark worker %+v: want 390µs running, none in a stretch", got)
	}
}

// A request whose handler keeps the processor for 5 ms shows as a busy
// stretch of requests, and a collection as the GC's mark worker, in an
// execution trace of this process.
func TestAnalyzeTraceFindsWhatHeldTheProcessor(t *testing.T) {
	const spin = 5 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for start := time.Now(); time.Since(start) < spin; {
		}
	}))
	defer srv.Close()
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
	}
	runtime.GC()
	rtrace.Stop()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyzeTrace(&buf)
	if err != nil {
		t.Fatal(err)
	}
	req := rep.kinds[kindRequests]
	if req.running < spin || req.longest < time.Millisecond {
		t.Errorf("requests ran %v, longest run %v; want at least %v, and a run over 1 ms", req.running, req.longest, spin)
	}
	if rep.stretches < 1 || rep.longest < time.Millisecond || req.inLong < time.Millisecond {
		t.Errorf("%d busy stretches over 1 ms, the longest %v, requests in them %v; want the handler's", rep.stretches, rep.longest, req.inLong)
	}
	if rep.kinds[kindMarkWorker].running == 0 {
		t.Error("runtime.GC's marking is not in the report")
	}
	if rep.span < spin {
		t.Errorf("the trace spans %v, less than the handler ran", rep.span)
	}
}

// The bare proxy's role with -traces serves an execution trace on its
// second URL; fetchTrace reads the requests sent meanwhile out of it, and
// writeHolds puts the report in a row per kind that ran.
func TestBareProxyRoleServesATrace(t *testing.T) {
	up := httptest.NewServer(upstreamHandler())
	defer up.Close()
	h, err := bareProxy(up.URL, false)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serveRole(h, true, inR, outW) }()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	urls := strings.Fields(strings.TrimPrefix(line, "ready "))
	if len(urls) != 2 {
		t.Fatalf("ready line %q, want a URL and a trace URL", line)
	}
	got := make(chan holdReport, 1)
	go func() {
		b, err := fetchTrace(urls[1], 300*time.Millisecond)
		if err != nil {
			t.Error(err)
		}
		rep, err := analyzeTrace(bytes.NewReader(b))
		if err != nil {
			t.Error(err)
		}
		got <- rep
	}()
	r := runLoad(loadCmd{Mode: "rate", URL: urls[0], Conns: 2, Rate: 200, Seconds: 0.5})
	rep := <-got
	_ = inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r.Errors != 0 || rep.kinds[kindRequests].running == 0 || rep.span < 200*time.Millisecond {
		t.Fatalf("%d requests (%d errors); the trace spans %v with %v of requests", r.Requests, r.Errors, rep.span, rep.kinds[kindRequests].running)
	}
	var b strings.Builder
	writeHolds(&b, options{trace: 300 * time.Millisecond, rates: []int{200}}, "bare ReverseProxy", []holdReport{rep, rep})
	if !strings.Contains(b.String(), "| | bare ReverseProxy | airouter |") {
		t.Errorf("the table's header does not name the floor:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "| "+kindNames[kindRequests]+" | ") || strings.Contains(b.String(), kindNames[kindNATSServer]) {
		t.Errorf("the table has no row of requests, or one of a kind that did not run:\n%s", b.String())
	}
}
