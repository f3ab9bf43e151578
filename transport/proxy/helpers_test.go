package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

const masterKey = "master-key-for-tests"

// mapGate is routing data: the blocks a snapshot would hold, by pair; the
// model "*" blocks a whole credential.
type mapGate map[domain.Key]domain.Block

func (g mapGate) Blocked(credential, model string, now time.Time) (domain.Block, bool) {
	for _, k := range [2]domain.Key{{Credential: credential, Model: model}, {Credential: credential, Model: domain.AllModels}} {
		if b, ok := g[k]; ok && (b.Permanent || now.Before(b.Until)) {
			return b, true
		}
	}
	return domain.Block{}, false
}

// clockStart is where the fixture's fake clock starts; tests move it by
// hand.
var clockStart = time.Date(2026, 9, 21, 10, 0, 0, 0, time.UTC)

// timerClock is the fixture's fake clock as the proxy sees it: it hands
// each timer the proxy arms (an attempt's, then a stream's budget) to the
// test, which can so move the clock at a known point of a request: once a
// timer is armed, or once the proxy stopped it.
type timerClock struct {
	*clockwork.FakeClock
	armed chan *armedTimer
}

// armedTimer is a timer the proxy armed on a timerClock.
type armedTimer struct {
	clockwork.Timer
	d       time.Duration // what it was armed for
	stopped chan struct{} // closed by the first Stop
	once    sync.Once
}

func (c *timerClock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	t := &armedTimer{Timer: c.FakeClock.AfterFunc(d, f), d: d, stopped: make(chan struct{})}
	select {
	case c.armed <- t:
	default: // a test that does not look at the timers leaves them
	}
	return t
}

func (t *armedTimer) Stop() bool {
	ok := t.Timer.Stop()
	t.once.Do(func() { close(t.stopped) })
	return ok
}

// outcomes collects recorded outcomes; Record never blocks.
type outcomes struct {
	ch chan domain.Outcome
	mu sync.Mutex
	ls []domain.Outcome
}

func newOutcomes() *outcomes { return &outcomes{ch: make(chan domain.Outcome, 1024)} }

func (o *outcomes) record(x domain.Outcome) {
	select {
	case o.ch <- x:
	default:
	}
}

// wait returns the first n outcomes, failing the test if they do not
// come; the bound only keeps a broken test from hanging.
func (o *outcomes) wait(t *testing.T, n int) []domain.Outcome {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.ls) < n {
		o.ls = append(o.ls, testkit.Receive(t, fmt.Sprintf("outcome %d of %d after %+v", len(o.ls)+1, n, o.ls), o.ch))
	}
	return append([]domain.Outcome(nil), o.ls[:n]...)
}

// step scripts one upstream answer.
type step struct {
	status int
	body   string
	header map[string]string
	// events are written and flushed one by one as an SSE stream.
	events []string
	// gate, when set, is waited on after the first event.
	gate chan struct{}
	// hang blocks until the request is canceled.
	hang bool
	// drop closes the connection: before anything when no events are
	// given, else after the events.
	drop bool
	// before runs first (e.g. to move a fake clock).
	before func()
}

// seen is what an upstream received.
type seen struct {
	path, query string
	header      http.Header
	body        []byte
}

// upstream is a fake provider on 127.0.0.1 answering from a script; the
// last step repeats.
type upstream struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	script   []step
	calls    []seen
	canceled chan struct{}
	arrived  chan struct{}
}

func newUpstream(t *testing.T, script ...step) *upstream {
	t.Helper()
	u := &upstream{t: t, script: script, canceled: make(chan struct{}, 16), arrived: make(chan struct{}, 16)}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) url() string { return u.srv.URL }

func (u *upstream) requests() []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seen(nil), u.calls...)
}

func (u *upstream) count() int { return len(u.requests()) }

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.calls = append(u.calls, seen{path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: body})
	s := step{status: 200, body: chatOK("hello")}
	if len(u.script) > 0 {
		s = u.script[0]
		if len(u.script) > 1 {
			u.script = u.script[1:]
		}
	}
	u.mu.Unlock()
	notify(u.arrived)
	if s.before != nil {
		s.before()
	}
	if s.hang {
		<-r.Context().Done()
		notify(u.canceled)
		return
	}
	if s.drop && len(s.events) == 0 {
		panic(http.ErrAbortHandler)
	}
	for k, v := range s.header {
		w.Header().Set(k, v)
	}
	if s.events != nil {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(max(s.status, 200))
		rc := http.NewResponseController(w)
		for i, ev := range s.events {
			_, _ = io.WriteString(w, ev)
			_ = rc.Flush()
			if i == 0 && s.gate != nil {
				select {
				case <-s.gate:
				case <-r.Context().Done():
					notify(u.canceled)
					return
				}
			}
		}
		if s.drop {
			panic(http.ErrAbortHandler)
		}
		return
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(s.status)
	_, _ = io.WriteString(w, s.body)
}

// chatOK is a chat completion with content and usage.
func chatOK(content string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"up-model",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"` + content + `"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30}}`
}

const chatEmpty = `{"id":"chatcmpl-2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}`

// sse renders one data event.
func sse(data string) string { return "data: " + data + "\n\n" }

func chunk(content string) string {
	return sse(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + content + `"}}]}`)
}

// fixture is a proxy under test behind a real server.
type fixture struct {
	t     *testing.T
	p     *Proxy
	srv   *httptest.Server
	out   *outcomes
	clock *clockwork.FakeClock
	// timers receives the timers the proxy arms on clock, in order.
	timers chan *armedTimer
	gate   mapGate
	set    Settings
	logs   *testkit.Buffer
}

// cred is an openai credential on a fake upstream.
func cred(name string, u *upstream) Credential {
	return Credential{Name: name, Type: domain.CredentialOpenAI, BaseURL: u.url() + "/v1", APIKey: "sk-test-" + name + "-0123456789abcdef"}
}

// newFixture builds a proxy; edit may change the deps before New.
func newFixture(t *testing.T, creds []Credential, routes []Route, edit func(*Deps)) *fixture {
	t.Helper()
	f := &fixture{t: t, out: newOutcomes(), clock: clockwork.NewFakeClockAt(clockStart),
		timers: make(chan *armedTimer, 16), gate: mapGate{}, set: Settings{MaxHops: 20}, logs: &testkit.Buffer{}}
	d := Deps{
		Credentials: creds,
		Routes:      routes,
		MasterKey:   masterKey,
		ClientKeys:  []string{"client-key-1"},
		Gate:        func() Gate { return f.gate },
		Settings:    func() Settings { return f.set },
		Record:      f.out.record,
		Logger:      hclog.New(&hclog.LoggerOptions{Output: f.logs, Level: hclog.Trace}),
		Clock:       &timerClock{FakeClock: f.clock, armed: f.timers},
	}
	if edit != nil {
		edit(&d)
	}
	p, err := New(d)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.p = p
	f.srv = httptest.NewServer(p.Handler())
	t.Cleanup(func() { f.srv.Close(); p.Close() })
	return f
}

// nextTimer returns the next timer the proxy arms on the fixture's clock.
func (f *fixture) nextTimer() *armedTimer {
	f.t.Helper()
	return testkit.Receive(f.t, "the proxy to arm a timer", f.timers)
}

// routesFor routes model to each credential with the same upstream name.
func routesFor(model string, names ...string) []Route {
	rs := make([]Route, 0, len(names))
	for _, n := range names {
		rs = append(rs, Route{Model: model, Credential: n})
	}
	return rs
}

// post sends a request with the master key and returns the response with
// its body read.
func (f *fixture) post(path, body string, hdr ...string) (*http.Response, string) {
	f.t.Helper()
	return f.do(context.Background(), path, body, hdr...)
}

func (f *fixture) do(ctx context.Context, path, body string, hdr ...string) (*http.Response, string) {
	f.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+masterKey)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatalf("POST %s: %v", path, err)
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		f.t.Fatalf("reading %s: %v", path, err)
	}
	return resp, string(b)
}

const chatReq = `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`

func (u *upstream) setScript(script ...step) {
	u.mu.Lock()
	u.script = script
	u.mu.Unlock()
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}

// notify signals without blocking; tests wait on the first signals only.
func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
