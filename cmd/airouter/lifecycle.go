package main

import (
	"encoding/json"
	"net/http"
	"sync/atomic"

	"github.com/airouter/airouter/apierror"
)

// phase is where a serving process is in its life, as /readyz reports it.
type phase int32

const (
	// phaseStarting: listening, the projections not yet caught up with
	// the log.
	phaseStarting phase = iota
	// phaseReady: caught up and accepting traffic.
	phaseReady
	// phaseDraining: a stop signal came; requests are still served for
	// server.shutdown_delay, then the server stops accepting.
	phaseDraining
)

// String is the status /readyz and /livez write.
func (p phase) String() string {
	switch p {
	case phaseReady:
		return "ready"
	case phaseDraining:
		return "draining"
	}
	return "starting"
}

// gate is the HTTP handler of a serving process. /livez and /readyz
// answer from the process's phase, without auth, from the moment the
// listener opens; every other path goes to the router's handler once the
// router is ready, and is a 503 in the API's error shape before.
type gate struct {
	phase atomic.Int32
	next  atomic.Pointer[http.Handler]
}

// open hands the router's handler over and reports ready.
func (g *gate) open(h http.Handler) {
	g.next.Store(&h)
	g.phase.Store(int32(phaseReady))
}

// drain makes /readyz answer 503; requests are still served.
func (g *gate) drain() { g.phase.Store(int32(phaseDraining)) }

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := phase(g.phase.Load())
	switch r.URL.Path {
	case "/livez":
		// The process serves: that is all liveness says. An outage of
		// every upstream (/health 503) or of the log must not restart it.
		writeProbe(w, http.StatusOK, p)
		return
	case "/readyz":
		status := http.StatusOK
		if p != phaseReady {
			status = http.StatusServiceUnavailable
		}
		writeProbe(w, status, p)
		return
	}
	if h := g.next.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	writeStarting(w, r.URL.Path == "/v1/messages")
}

// startingMessage is the error a request gets before the router is ready.
const startingMessage = "airouter is starting: it is replaying its event log and not yet accepting requests"

// writeStarting answers 503 with code "starting", in the Anthropic shape
// on /v1/messages and in the OpenAI shape elsewhere.
func writeStarting(w http.ResponseWriter, anthropic bool) {
	const st = http.StatusServiceUnavailable
	var body any = apierror.OpenAIBody{Error: apierror.NewOpenAI(st, startingMessage, "starting")}
	if anthropic {
		body = struct {
			Type  string             `json:"type"`
			Error apierror.Anthropic `json:"error"`
		}{"error", apierror.NewAnthropic(st, startingMessage, "starting")}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(st)
	_ = json.NewEncoder(w).Encode(body)
}

func writeProbe(w http.ResponseWriter, status int, p phase) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"status": p.String()})
}
