package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/internal/testkit"
)

// rawRequest opens a connection to the fixture's server and writes the
// head of a POST to path with the master key and the given framing
// header ("Content-Length: 100" or "Transfer-Encoding: chunked"), then
// body, and leaves the connection open for more. Answers come on the
// returned channel.
func (f *fixture) rawRequest(path, framing, body string) (net.Conn, <-chan reply) {
	f.t.Helper()
	conn, err := net.Dial("tcp", f.srv.Listener.Addr().String())
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = conn.Close() })
	head := "POST " + path + " HTTP/1.1\r\nHost: airouter\r\nAuthorization: Bearer " + masterKey +
		"\r\nContent-Type: application/json\r\n" + framing + "\r\n\r\n"
	if _, err := io.WriteString(conn, head+body); err != nil {
		f.t.Fatal(err)
	}
	ch := make(chan reply, 1)
	go func() {
		var r reply
		r.resp, r.err = http.ReadResponse(bufio.NewReader(conn), nil)
		if r.err == nil {
			b, err := io.ReadAll(r.resp.Body)
			r.body, r.err = string(b), err
		}
		ch <- r
	}()
	return conn, ch
}

func withRequestTimeout(d time.Duration) func(*Deps) {
	return func(dp *Deps) { dp.RequestTimeout = d }
}

// A body that does not arrive within request_timeout gets 408 in the
// surface's envelope, and costs no upstream attempt: the upstream sees
// nothing, no outcome is recorded and the credential is not charged.
func TestSlowBodyGets408WithinRequestTimeout(t *testing.T) {
	const timeout = 10 * time.Second
	for _, c := range []struct{ path, envelope string }{
		{"/v1/chat/completions", `{"error":{"message":%q,"type":"timeout_error","param":null,"code":null}}`},
		{"/v1/messages", `{"type":"error","error":{"type":"api_error","message":%q}}`}, // apierror's Anthropic column
	} {
		t.Run(c.path, func(t *testing.T) {
			up := newUpstream(t)
			f := newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), withRequestTimeout(timeout))
			_, done := f.rawRequest(c.path, "Content-Length: 1000", `{"model":"gpt-4o",`)
			tm := f.nextTimer()
			if tm.d != timeout {
				t.Fatalf("the body read is bounded by %v, want request_timeout %v", tm.d, timeout)
			}
			notYet(t, done)
			f.clock.Advance(timeout)
			resp, body := f.await(done)
			if resp.StatusCode != http.StatusRequestTimeout {
				t.Fatalf("status %d body %s, want 408", resp.StatusCode, body)
			}
			if want := fmt.Sprintf(c.envelope, errBodyTimeout.Error()); strings.TrimSpace(body) != want {
				t.Errorf("body %s\nwant %s", body, want)
			}
			if !resp.Close {
				t.Error("the connection of a timed-out body must be closed")
			}
			if up.count() != 0 {
				t.Errorf("the upstream saw %d requests, want none", up.count())
			}
			if rpm, _ := f.p.Usage("a", "gpt-4o"); rpm != 0 {
				t.Errorf("credential charged %d requests, want none", rpm)
			}
			if len(f.out.ch) != 0 {
				t.Errorf("%d outcomes recorded, want none", len(f.out.ch))
			}
			testkit.Eventually(t, "the body budget to be released", func() bool { return f.p.budget.inUse() == 0 })
		})
	}
}

// A body that arrives within request_timeout is served, and its timer is
// stopped.
func TestBodyWithinRequestTimeoutIsServed(t *testing.T) {
	up := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), withRequestTimeout(10*time.Second))
	done := f.send("/v1/chat/completions", chatReq)
	tm := f.nextTimer()
	testkit.Receive(t, "the body read to stop its timer", tm.stopped)
	f.nextTimer() // the attempt's
	resp, body := f.await(done)
	if resp.StatusCode != 200 || up.count() != 1 {
		t.Fatalf("status %d body %s, upstream saw %d", resp.StatusCode, body, up.count())
	}
	if got := string(up.requests()[0].body); got != chatReq {
		t.Errorf("upstream got %q, want %q", got, chatReq)
	}
}

// declaredBodyAlloc sends the start of a body declaring 99 MiB, lets
// request_timeout run out (408) and returns the bytes allocated meanwhile.
func declaredBodyAlloc(t *testing.T, sent string) uint64 {
	t.Helper()
	const timeout = 10 * time.Second
	f := newFixture(t, []Credential{cred("a", newUpstream(t))}, routesFor("gpt-4o", "a"), withRequestTimeout(timeout))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, done := f.rawRequest("/v1/chat/completions", fmt.Sprintf("Content-Length: %d", 99<<20), sent)
	f.nextTimer()
	f.clock.Advance(timeout)
	resp, body := f.await(done)
	runtime.ReadMemStats(&after)
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("status %d body %s, want 408", resp.StatusCode, body)
	}
	return after.TotalAlloc - before.TotalAlloc
}

// A declared length is not allocated before the bytes arrive: 10 bytes of a
// declared 99 MiB body allocate far less than 99 MiB.
func TestDeclaredLargeBodyIsNotAllocated(t *testing.T) {
	if alloc := declaredBodyAlloc(t, `{"model":`); alloc > 8<<20 {
		t.Errorf("one request declaring 99 MiB and sending 9 bytes allocated %d bytes", alloc)
	}
}

// A client that declares 99 MiB and sends 3 MiB of it holds a buffer of
// about twice what it sent, never one of the declared length. The write
// returns once the server has taken all but what the sockets buffer, so
// well past 1 MiB has arrived.
func TestPartOfADeclaredBodyHoldsAboutWhatArrived(t *testing.T) {
	if alloc := declaredBodyAlloc(t, `{"model":"`+strings.Repeat("a", 3<<20)); alloc > 32<<20 {
		t.Errorf("one request declaring 99 MiB and sending 3 MiB allocated %d bytes", alloc)
	}
}

// A body of unknown length that passes max_body_size gets 413 at once,
// while its client is still sending.
func TestChunkedBodyPastTheLimitGets413AtOnce(t *testing.T) {
	up := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), func(d *Deps) { d.MaxBodyBytes = 1000 })
	chunk := strings.Repeat("a", 1500)
	_, done := f.rawRequest("/v1/chat/completions", "Transfer-Encoding: chunked", fmt.Sprintf("%x\r\n%s\r\n", len(chunk), chunk))
	resp, body := f.await(done)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || up.count() != 0 {
		t.Fatalf("status %d body %s, upstream saw %d; want 413 and nothing forwarded", resp.StatusCode, body, up.count())
	}
}

// The body budget bounds the bytes held across requests: with room for one
// 600-byte body, a second waits until the first request ends, and is then
// served.
func TestBodyBudgetMakesASecondBodyWait(t *testing.T) {
	up := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), func(d *Deps) {
		d.MaxBodyBytes, d.BodyBudgetBytes = 1000, 1000
	})
	full := padTo(600, "")
	conn, first := f.rawRequest("/v1/chat/completions", "Content-Length: 600", full[:10])
	testkit.Eventually(t, "the first body to reserve its length", func() bool { return f.p.budget.inUse() >= 600 })
	_, second := f.rawRequest("/v1/chat/completions", "Content-Length: 600", full)
	testkit.Eventually(t, "the second body to wait for room", func() bool { return f.p.budget.waiting() == 1 })
	notYet(t, second)
	if _, err := io.WriteString(conn, full[10:]); err != nil {
		t.Fatal(err)
	}
	for i, done := range []<-chan reply{first, second} {
		if resp, body := f.await(done); resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d body %s", i+1, resp.StatusCode, body)
		}
	}
	if up.count() != 2 {
		t.Errorf("upstream saw %d requests, want 2", up.count())
	}
	testkit.Eventually(t, "the body budget to be released", func() bool { return f.p.budget.inUse() == 0 })
}

// A request that finds no room within request_timeout gets 503 with
// Retry-After and is not forwarded. The room is held by a stream still
// running (the body's bytes are held until the request ends).
func TestBodyBudgetWaitEndsIn503(t *testing.T) {
	const timeout = 10 * time.Second
	gate := make(chan struct{})
	up := newUpstream(t, step{events: []string{chunk("x"), "data: [DONE]\n\n"}, gate: gate})
	f := newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), func(d *Deps) {
		d.MaxBodyBytes, d.BodyBudgetBytes, d.RequestTimeout = 1000, 1000, timeout
	})
	first := f.send("/v1/chat/completions", padTo(600, `"stream":true,`))
	f.nextTimer() // the first body's, stopped
	testkit.Receive(t, "the stream's headers to stop the attempt's timer", f.nextTimer().stopped)
	_, second := f.rawRequest("/v1/chat/completions", "Content-Length: 600", padTo(600, ""))
	if tm := f.nextTimer(); tm.d != timeout {
		t.Fatalf("the second body's wait is bounded by %v, want request_timeout %v", tm.d, timeout)
	}
	testkit.Eventually(t, "the second body to wait for room", func() bool { return f.p.budget.waiting() == 1 })
	notYet(t, second)
	f.clock.Advance(timeout)
	resp, body := f.await(second)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != bodyBusyRetryAfter {
		t.Fatalf("status %d Retry-After %q body %s, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	var env struct {
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil || env.Error.Type != "server_error" || env.Error.Message != errBodyBusy.Error() {
		t.Errorf("body %s (%v)", body, err)
	}
	close(gate)
	if resp, body := f.await(first); resp.StatusCode != 200 {
		t.Errorf("the stream holding the room: status %d body %s", resp.StatusCode, body)
	}
	if up.count() != 1 {
		t.Errorf("upstream saw %d requests, want only the stream", up.count())
	}
	testkit.Eventually(t, "the body budget to be released", func() bool { return f.p.budget.inUse() == 0 && f.p.budget.waiting() == 0 })
}

// padTo is a chat request of exactly n bytes, with members (each followed
// by a comma) after the model.
func padTo(n int, members string) string {
	prefix, suffix := `{"model":"gpt-4o",`+members+`"messages":[],"pad":"`, `"}`
	return prefix + strings.Repeat("a", n-len(prefix)-len(suffix)) + suffix
}

// A body of unknown length reserves its buffer as it grows, is served
// whole, and gives its room back when the request ends.
func TestChunkedBodyWithinTheBudgetIsServed(t *testing.T) {
	up := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), func(d *Deps) {
		d.MaxBodyBytes, d.BodyBudgetBytes = 8000, 8000
	})
	body := padTo(5000, "")
	_, done := f.rawRequest("/v1/chat/completions", "Transfer-Encoding: chunked",
		fmt.Sprintf("%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", 3000, body[:3000], 2000, body[3000:]))
	if resp, b := f.await(done); resp.StatusCode != 200 {
		t.Fatalf("status %d body %s", resp.StatusCode, b)
	}
	if got := string(up.requests()[0].body); got != body {
		t.Errorf("upstream got %d bytes, want the %d sent", len(got), len(body))
	}
	testkit.Eventually(t, "the body budget to be released", func() bool { return f.p.budget.inUse() == 0 })
}

// The budget grants room in arrival order, and a waiter that gives up
// leaves the queue without keeping room.
func TestBodyBudgetGrantsInArrivalOrder(t *testing.T) {
	b := &bodyBudget{size: 10}
	never := make(chan struct{})
	stopNever := func() <-chan struct{} { return never }
	if !b.acquire(8, stopNever, never) {
		t.Fatal("room that is free was refused")
	}
	big, small := make(chan bool, 1), make(chan bool, 1)
	go func() { big <- b.acquire(6, stopNever, never) }()
	testkit.Eventually(t, "the large request to wait", func() bool { return b.waiting() == 1 })
	quit := make(chan struct{})
	go func() { small <- b.acquire(2, func() <-chan struct{} { return quit }, never) }()
	testkit.Eventually(t, "the small request to queue behind it", func() bool { return b.waiting() == 2 })
	close(quit)
	if testkit.Receive(t, "the small request to give up", small) {
		t.Fatal("a request behind a waiting one jumped the queue")
	}
	b.release(8)
	if !testkit.Receive(t, "the large request to get its room", big) {
		t.Fatal("the large request was refused")
	}
	if b.inUse() != 6 || b.waiting() != 0 {
		t.Errorf("in use %d, waiting %d; want 6 and 0", b.inUse(), b.waiting())
	}
}

// A body watch makes its stop channel only when a wait asks for it, and
// the channel is closed whether request_timeout ran out before or after
// it was made; a watch finished in time never closes it.
func TestBodyWatchStopsWaitsMadeBeforeOrAfterItExpired(t *testing.T) {
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	early := &bodyWatch{w: httptest.NewRecorder()}
	stop := early.stop()
	if closed(stop) {
		t.Fatal("a stop channel was closed before request_timeout ran out")
	}
	early.expire()
	if !closed(stop) || !early.finish() {
		t.Error("a wait made before request_timeout ran out was not stopped, or the read not counted late")
	}
	late := &bodyWatch{w: httptest.NewRecorder()}
	late.expire()
	if late.expired != nil {
		t.Error("expiring made a stop channel nobody waits on")
	}
	if !closed(late.stop()) {
		t.Error("a wait made after request_timeout ran out was not stopped at once")
	}
	inTime := &bodyWatch{w: httptest.NewRecorder()}
	stop = inTime.stop()
	if inTime.finish() {
		t.Error("a read that finished in time counted late")
	}
	inTime.expire()
	if closed(stop) {
		t.Error("a finished watch closed its stop channel")
	}
}
