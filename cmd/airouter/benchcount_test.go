package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// newResettingUpstream is an upstream that refuses every body by resetting
// the connection as soon as the request's headers are in, while the client
// is still sending the body.
func newResettingUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.calls.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close with RST
		}
		_ = conn.Close()
	}))
	t.Cleanup(u.Close)
	return u
}

// bigChat sends a chat completion whose body (8 MiB) is far larger than
// what the sockets between the router and an upstream buffer, so the
// upstream's reset reaches the router while it is still sending the body.
func bigChat(t *testing.T, r *running) int {
	t.Helper()
	status, _, _ := r.do(t, "POST", "/v1/chat/completions", testMasterKey, map[string]any{
		"model":    "gpt-test",
		"messages": []map[string]string{{"role": "user", "content": strings.Repeat("x", 8<<20)}},
	})
	return status
}

// logEvents reads every event of r's log.
func logEvents(t *testing.T, r *running) []domain.Event {
	t.Helper()
	var evs []domain.Event
	err := r.log.Read(t.Context(), 1, 0, func(ev domain.Event, _ uint64) error {
		evs = append(evs, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// A request whose body three upstreams refuse by resetting the connection
// fails on all three credentials, but counts once toward the model bench:
// with model_bench.failures 3 the model is benched by the third such
// request, not by the first one's three outcomes.
func TestABodyRefusedOnEveryCredentialCountsOnceTowardTheBench(t *testing.T) {
	ups := []*upstream{newResettingUpstream(t), newResettingUpstream(t), newResettingUpstream(t)}
	extra := "fail2ban:\n  max_attempts: 100\nmodel_bench:\n  failures: 3\n  window: 15m\n  duration: 10m\n"
	r := start(t, testConfig(t, tempStore(t), "file", extra, ups...))

	if status := bigChat(t, r); status != http.StatusBadGateway {
		t.Fatalf("first request: status %d, want 502 (every attempt failed)", status)
	}
	var window []domain.ModelFailure
	testkit.Eventually(t, "the first request's three failures in the bench window", func() bool {
		window = r.live.Load().ModelFailures("gpt-test")
		return len(window) == 3
	})
	for _, mf := range window {
		if mf.RequestID == "" || mf.RequestID != window[0].RequestID || !mf.BodyUnsent || mf.Code != 502 {
			t.Fatalf("window = %+v: want three failures of one request, all while the body was sent", window)
		}
	}
	for i, u := range ups {
		if n := u.calls.Load(); n != 1 {
			t.Fatalf("upstream %d called %d times, want 1", i, n)
		}
	}
	if status := bigChat(t, r); status != http.StatusBadGateway {
		t.Fatalf("second request: status %d, want 502: the model must not be benched by one request", status)
	}
	if status := bigChat(t, r); status != http.StatusBadGateway {
		t.Fatalf("third request: status %d, want 502", status)
	}

	var bench *domain.Bench
	testkit.Eventually(t, "the bench in the log", func() bool {
		for _, ev := range logEvents(t, r) {
			if ev.Kind == domain.KindModelBenched {
				bench = ev.Bench
			}
		}
		return bench != nil
	})
	// The bench names its cause: it must be an outcome of the third
	// request (requests in order of first appearance in the log).
	var requests []string
	var cause *domain.Outcome
	for _, ev := range logEvents(t, r) {
		if ev.Kind != domain.KindOutcomeRecorded {
			continue
		}
		if !ev.Outcome.BodyUnsent {
			t.Fatalf("outcome %+v: want body_unsent", ev.Outcome)
		}
		if !slices.Contains(requests, ev.Outcome.RequestID) {
			requests = append(requests, ev.Outcome.RequestID)
		}
		if ev.Seq == bench.CauseSeq && ev.Index == bench.CauseIndex {
			cause = ev.Outcome
		}
	}
	if len(requests) != 3 || cause == nil || cause.RequestID != requests[2] {
		t.Fatalf("bench %+v caused by %+v; requests %v: want the third request to bench the model", bench, cause, requests)
	}
	if bench.Failures != 3 || !strings.HasPrefix(bench.Reason, "3 failures on 3 credentials") {
		t.Fatalf("bench = %+v, want 3 failures (one per request) on 3 credentials", bench)
	}
	if n := countEvents(t, r, func(ev domain.Event) bool { return ev.Kind == domain.KindModelBenched }); n != 1 {
		t.Fatalf("%d bench events, want 1", n)
	}
}
