package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/trace"
	"strings"
	"testing"
	"time"
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
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
	}
	runtime.GC()
	trace.Stop()
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
	h, err := bareProxy(up.URL)
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
		rep, err := fetchTrace(urls[1], 300*time.Millisecond)
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
	writeHolds(&b, options{trace: 300 * time.Millisecond, rates: []int{200}}, []holdReport{rep, rep})
	if !strings.Contains(b.String(), "| "+kindNames[kindRequests]+" | ") || strings.Contains(b.String(), kindNames[kindNATSServer]) {
		t.Errorf("the table has no row of requests, or one of a kind that did not run:\n%s", b.String())
	}
}
