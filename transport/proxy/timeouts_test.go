package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// handlerServer is an upstream on 127.0.0.1 running h.
func handlerServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// stalledBody sends 200 headers and the start of a JSON body, then stalls
// until the request is canceled, reporting that on canceled.
func stalledBody(canceled chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, `{"id":"chatcmpl-1","choices":[`)
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done()
		notify(canceled)
	}
}

// slowEvents streams events, one every gap, after the headers.
func slowEvents(events []string, gap time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		for _, ev := range events {
			select {
			case <-time.After(gap):
			case <-r.Context().Done():
				return
			}
			_, _ = io.WriteString(w, ev)
			_ = rc.Flush()
		}
	}
}

// manyChunks is a chat stream of n content chunks, usage and [DONE].
func manyChunks(n int) []string {
	evs := make([]string, 0, n+2)
	for i := range n {
		evs = append(evs, chunk("w"+string(rune('a'+i))))
	}
	return append(evs, usageChunk, "data: [DONE]\n\n")
}

// bounded posts with a deadline, so a proxy that fails to cut an attempt
// fails the test instead of hanging it.
func (f *fixture) bounded(path, body string) (*http.Response, string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.t.Context(), 3*time.Second)
	defer cancel()
	return f.do(ctx, path, body)
}

// reply is the answer to a request sent with send, its body read, or the
// error that ended it.
type reply struct {
	resp *http.Response
	body string
	err  error
}

// send posts body to path with the master key in the background, so that
// the test can move the fake clock while the proxy works on the request;
// await takes the answer. testkit.Context bounds the request, so a proxy
// that never answers fails the test instead of hanging it.
func (f *fixture) send(path, body string) <-chan reply {
	f.t.Helper()
	ctx := testkit.Context(f.t)
	ch := make(chan reply, 1)
	go func() {
		var r reply
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+path, strings.NewReader(body))
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+masterKey)
			req.Header.Set("Content-Type", "application/json")
			r.resp, err = f.srv.Client().Do(req)
		}
		if err == nil {
			var b []byte
			b, err = io.ReadAll(r.resp.Body)
			_ = r.resp.Body.Close()
			r.body = string(b)
		}
		r.err = err
		ch <- r
	}()
	return ch
}

// await returns the answer to a request sent with send.
func (f *fixture) await(ch <-chan reply) (*http.Response, string) {
	f.t.Helper()
	r := testkit.Receive(f.t, "the proxy's answer", ch)
	if r.err != nil {
		f.t.Fatalf("request: %v", r.err)
	}
	return r.resp, r.body
}

// notYet fails the test if the request sent with send has its answer
// already.
func notYet(t *testing.T, ch <-chan reply) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("answered before the clock moved: %v %q (error %v)", r.resp, r.body, r.err)
	default:
	}
}

func waitSignal(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s never happened", what)
	}
}

// request_timeout bounds the body of a non-streamed response: an upstream
// that sends its headers and then stalls is cut and the request fails over,
// or, with nobody left, ends in 502.
func TestRequestTimeoutBoundsANonStreamedBody(t *testing.T) {
	const timeout = 80 * time.Millisecond
	t.Run("fails over", func(t *testing.T) {
		canceled := make(chan struct{}, 4)
		a := handlerServer(t, stalledBody(canceled))
		b := newUpstream(t)
		f := newFixture(t, []Credential{credAt("a", a.URL), cred("b", b)}, routesFor("gpt-4o", "a", "b"), func(d *Deps) {
			d.RequestTimeout = timeout
			d.Clock = nil // request_timeout cuts a real connection on the real clock
		})
		start := time.Now()
		resp, body := f.bounded("/v1/chat/completions", chatReq)
		took := time.Since(start)
		if resp.StatusCode != 200 || body != chatOK("hello") {
			t.Fatalf("status %d body %q, want b's answer", resp.StatusCode, body)
		}
		if tr := resp.Header.Get(hdrTrail); tr != "a/gpt-4o=timeout; b/gpt-4o=ok" {
			t.Errorf("trail %q", tr)
		}
		if took < timeout || took > timeout+time.Second {
			t.Errorf("took %v, want about the %v request timeout", took, timeout)
		}
		if o := f.out.wait(t, 1)[0]; o.Credential != "a" || o.Class != domain.ClassTimeout || o.Code() != domain.StatusTimeout {
			t.Errorf("outcome %+v, want a timeout held against a", o)
		}
		waitSignal(t, canceled, "canceling the stalled upstream request")
	})
	t.Run("only candidate: 502", func(t *testing.T) {
		canceled := make(chan struct{}, 4)
		a := handlerServer(t, stalledBody(canceled))
		f := newFixture(t, []Credential{credAt("a", a.URL)}, routesFor("gpt-4o", "a"), func(d *Deps) {
			d.RequestTimeout = timeout
			d.Clock = nil
		})
		start := time.Now()
		resp, body := f.bounded("/v1/chat/completions", chatReq)
		if took := time.Since(start); took > timeout+time.Second {
			t.Errorf("took %v, want about the %v request timeout", took, timeout)
		}
		e := decodeExhaustion(t, body)
		if resp.StatusCode != 502 || len(e.Error.Trail) != 1 || e.Error.Trail[0].Class != domain.ClassTimeout {
			t.Errorf("status %d body %s, want 502 with a timeout hop", resp.StatusCode, body)
		}
		if strings.Contains(body, "chatcmpl-1") {
			t.Errorf("the stalled partial body reached the client: %s", body)
		}
		waitSignal(t, canceled, "canceling the stalled upstream request")
	})
}

// request_timeout does not cut a stream that has started: a stream that
// keeps sending for longer than the timeout reaches the client whole.
func TestRequestTimeoutDoesNotCutAStartedStream(t *testing.T) {
	const timeout = 50 * time.Millisecond
	evs := manyChunks(6)
	up := handlerServer(t, slowEvents(evs, 25*time.Millisecond))
	f := newFixture(t, []Credential{credAt("a", up.URL)}, routesFor("gpt-4o", "a"), func(d *Deps) {
		d.RequestTimeout = timeout
		d.Clock = nil // the stream's gaps and the timeout are real time
	})
	start := time.Now()
	resp, body := f.bounded("/v1/chat/completions", streamReq)
	took := time.Since(start)
	if took < 2*timeout {
		t.Fatalf("the stream took only %v; it must outlast the %v timeout for this test to mean anything", took, timeout)
	}
	if resp.StatusCode != 200 || body != strings.Join(evs, "") {
		t.Fatalf("status %d body %q, want the whole stream", resp.StatusCode, body)
	}
	if o := f.out.wait(t, 1)[0]; o.Class != domain.ClassOK || o.Status != 200 {
		t.Errorf("outcome %+v, want ok", o)
	}
}

// time_budget bounds the request up to the first byte sent: it never cuts
// a stream that has started. The stream's first event stops the budget's
// timer; the clock then moves well past the budget before the rest of the
// stream comes.
func TestTimeBudgetDoesNotCutAStartedStream(t *testing.T) {
	const budget = 5 * time.Second
	evs := manyChunks(6)
	rest := make(chan struct{})
	up := newUpstream(t, step{events: evs, gate: rest})
	f := newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), nil)
	f.set.TimeBudget = domain.Duration(budget)
	done := f.send("/v1/chat/completions", streamReq)
	f.nextTimer() // the attempt's, stopped by the headers
	first := f.nextTimer()
	if first.d != budget {
		t.Fatalf("the wait for the first event is armed for %v, want the %v budget", first.d, budget)
	}
	testkit.Receive(t, "the first event to stop the budget's timer", first.stopped)
	f.clock.Advance(10 * budget)
	close(rest)
	resp, body := f.await(done)
	if resp.StatusCode != 200 || body != strings.Join(evs, "") {
		t.Fatalf("status %d body %q, want the whole stream", resp.StatusCode, body)
	}
	if o := f.out.wait(t, 1)[0]; o.Class != domain.ClassOK {
		t.Errorf("outcome %+v, want ok", o)
	}
}

// time_budget bounds the wait for a stream's first event: an upstream that
// sends its headers and a keep-alive but no event within the budget ends in
// 504, and nothing of its stream reaches the client.
func TestTimeBudgetBoundsTheWaitForTheFirstEvent(t *testing.T) {
	const budget = 5 * time.Second
	a := newUpstream(t, step{events: []string{": keep-alive\n\n", chunk("too late")}, gate: make(chan struct{})})
	b := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
	f.set.TimeBudget = domain.Duration(budget)
	done := f.send("/v1/chat/completions", streamReq)
	f.nextTimer() // the attempt's, stopped by the headers
	if first := f.nextTimer(); first.d != budget {
		t.Fatalf("the wait for the first event is armed for %v, want the %v budget", first.d, budget)
	}
	notYet(t, done)
	f.clock.Advance(budget)
	resp, body := f.await(done)
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("status %d body %q, want 504", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("content type %q: the stream's headers reached the client", ct)
	}
	if strings.Contains(body, "keep-alive") || strings.Contains(body, "too late") || strings.Contains(body, "data:") {
		t.Errorf("bytes of the stream reached the client: %q", body)
	}
	e := decodeExhaustion(t, body)
	if e.Error.Type != "timeout_error" || e.Error.Code != "fallback_time_budget_exceeded" || len(e.Error.Trail) != 1 {
		t.Errorf("body %s", body)
	}
	if b.count() != 0 {
		t.Errorf("b was tried after the budget ran out")
	}
	waitSignal(t, a.canceled, "canceling the silent stream")
	if o := f.out.wait(t, 1)[0]; o.Credential != "a" || o.Class != domain.ClassCanceled {
		t.Errorf("outcome %+v, want canceled (the budget is not a's fault)", o)
	}
}
