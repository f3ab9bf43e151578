package adminapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/apierror"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/transport/eventlog"
)

// Keys shaped like real provider keys, so that a leak would also be caught
// by anyone grepping for "sk-".
const (
	masterKey = "sk-master-7d1f0c2a9b8e4d6f8a1c3e5b7d9f0a2c"
	clientKey = "sk-client-3b5d7f9a1c3e5b7d9f0a2c4e6a8c0e2f"
)

// t0 is the fake clock's start: 16:59 UTC, so a 30m ban ends at 17:29.
var t0 = time.Date(2026, 9, 21, 16, 59, 0, 0, time.UTC)

// logBuffer collects the API's JSON log lines from several goroutines.
type logBuffer struct{ testkit.Buffer }

// logLine is one JSON log line of the API's logger.
type logLine map[string]any

// lines parses the collected JSON log lines.
func (s *logBuffer) lines(t *testing.T) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		if l == "" {
			continue
		}
		var m logLine
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// The pool most tests use: two openai credentials, an anthropic one and a
// fallback relay.
var (
	testCreds = []Credential{
		{Name: "openai-1", Type: "openai", RPM: 100, TPM: 50000},
		{Name: "openai-2", Type: "openai", Weight: 2},
		{Name: "claude-1", Type: "anthropic", RPM: 60},
		{Name: "relay", Type: "proxy", IsFallback: true},
	}
	testPairs = []Pair{
		{Credential: "openai-1", Model: "gpt-4o", RPM: 50},
		{Credential: "openai-1", Model: "gpt-4o-mini"},
		{Credential: "openai-2", Model: "gpt-4o", Weight: 5},
		{Credential: "claude-1", Model: "claude-sonnet"},
		{Credential: "relay", Model: "gpt-4o"},
	}
	watchedCodes = map[int]bool{401: true, 403: true, 429: true, 500: true, 502: true, 503: true, 504: true}
)

// rig is a router's operators' surface on a real event log: events go
// through an embedded JetStream stream, are consumed and folded by a
// projections.Live exactly as cmd/airouter wires it, and reach the API's
// Observe from AfterApply.
type rig struct {
	t     testing.TB
	ctx   context.Context
	log   *eventlog.Log
	live  *projections.Live
	api   *API
	srv   *httptest.Server
	clock *clockwork.FakeClock
	logs  *logBuffer

	mu      sync.Mutex
	learned map[string][]string
	usage   map[domain.Key][2]int
	ids     atomic.Int64 // admin event ids
	oids    atomic.Int64 // outcome event ids
}

func newRig(t testing.TB) *rig {
	t.Helper()
	return newRigEdit(t, nil)
}

// newRigEdit is newRig with edit changing the deps before New.
func newRigEdit(t testing.TB, edit func(*Deps)) *rig {
	t.Helper()
	ctx := testkit.Context(t)
	l, err := eventlog.Open(ctx, eventlog.Options{StoreDir: t.TempDir(), Storage: eventlog.StorageMemory, Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatalf("open the event log: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(context.Background()); err != nil {
			t.Errorf("close the event log: %v", err)
		}
	})
	r := &rig{
		t: t, ctx: ctx, log: l, live: projections.NewLive(nil),
		clock: clockwork.NewFakeClockAt(t0), logs: &logBuffer{},
		usage: map[domain.Key][2]int{
			{Credential: "openai-1"}:                  {12, 3400},
			{Credential: "openai-1", Model: "gpt-4o"}: {7, 2100},
			{Credential: "openai-2"}:                  {3, 900},
			{Credential: "openai-2", Model: "gpt-4o"}: {3, 900},
			{Credential: "claude-1"}:                  {1, 120},
		},
	}
	d := Deps{
		MasterKey:       masterKey,
		Credentials:     testCreds,
		ConfiguredPairs: testPairs,
		Snapshot:        r.live.Load,
		WaitFor:         r.live.WaitFor,
		Publish:         l.PublishControl,
		Watched:         func(_ string, status int) bool { return watchedCodes[status] },
		LogStatus:       r.logStatus,
		DefaultSettings: domain.FallbackSettings{
			MaxHops: 20, TimeBudget: domain.Duration(45 * time.Second),
		},
		Logger: hclog.New(&hclog.LoggerOptions{Output: r.logs, Level: hclog.Debug, JSONFormat: true}),
		Clock:  r.clock.Now,
		NewID:  func() string { return fmt.Sprintf("admin-test/%d", r.ids.Add(1)) },
	}
	if edit != nil {
		edit(&d)
	}
	api, err := New(d)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r.api = api
	api.SetTraffic(r)
	r.live.AfterApply = func(_ *projections.State, ev domain.Event, ch projections.Change) { api.Observe(ev, ch, true) }
	stop, err := l.Consume(ctx, 0, func(ev domain.Event, pending uint64) { r.live.Apply(ev, pending) })
	if err != nil {
		t.Fatalf("consume the event log: %v", err)
	}
	t.Cleanup(stop)
	r.srv = httptest.NewServer(api.Handler())
	t.Cleanup(r.srv.Close)
	return r
}

// The rig is the API's Traffic, standing in for the proxy's counters.

// learn adds a pair as a proxy credential's refresh would.
func (r *rig) learn(p Pair) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.learned == nil {
		r.learned = map[string][]string{}
	}
	r.learned[p.Credential] = append(r.learned[p.Credential], p.Model)
}

func (r *rig) Learned() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]string, len(r.learned))
	for c, ms := range r.learned {
		out[c] = append([]string(nil), ms...)
	}
	return out
}

// Unkept are the proxy's counts past its bounds on client-chosen names.
func (r *rig) Unkept() map[string]uint64 { return map[string]uint64{"pools": 4, "pairs": 9} }

// Rejections are the proxy's selection counters, as the wiring passes them.
func (r *rig) Rejections() map[string]uint64 {
	return map[string]uint64{"banned": 2, "rate_limited": 1}
}

func (r *rig) Usage(cred, model string) (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.usage[domain.Key{Credential: cred, Model: model}]
	return u[0], u[1]
}

func (r *rig) logStatus() LogStatus {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	last, err := r.log.LastSeq(ctx)
	s := r.log.Stats()
	if err != nil {
		s.LastError = err.Error()
	}
	return LogStatus{Connected: s.Connected, LastSeq: last, Published: s.Published,
		Dropped: s.Dropped, Failed: s.Failed, LastError: s.LastError}
}

// publish writes events as the engine would (synchronously, de-duplicated)
// and waits until the snapshot reflects them.
func (r *rig) publish(evs ...domain.Event) {
	r.t.Helper()
	var seq uint64
	for _, ev := range evs {
		s, err := r.log.PublishControl(r.ctx, ev)
		if err != nil {
			r.t.Fatalf("publish %s: %v", ev.Kind, err)
		}
		seq = s
	}
	if err := r.live.WaitFor(r.ctx, seq); err != nil {
		r.t.Fatal(err)
	}
}

// do sends a request; auth is the whole Authorization header ("" for
// none).
func (r *rig) do(method, path, auth, body string) (int, http.Header, string) {
	r.t.Helper()
	req, err := http.NewRequestWithContext(r.ctx, method, r.srv.URL+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := r.srv.Client().Do(req)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	return res.StatusCode, res.Header, string(b)
}

// admin sends a request with the master key and wants the status.
func (r *rig) admin(method, path, body string, want int) string {
	r.t.Helper()
	status, _, got := r.do(method, path, "Bearer "+masterKey, body)
	if status != want {
		r.t.Fatalf("%s %s %s: status %d, want %d; body %s", method, path, body, status, want, got)
	}
	return got
}

// bans lists /api/bans.
func (r *rig) bans() []map[string]any {
	r.t.Helper()
	var out struct {
		Bans []map[string]any `json:"bans"`
	}
	decode(r.t, r.admin("GET", "/api/bans", "", 200), &out)
	return out.Bans
}

// health reads /health.
func (r *rig) health() (int, Health) {
	r.t.Helper()
	status, _, body := r.do("GET", "/health", "", "")
	var h Health
	decode(r.t, body, &h)
	return status, h
}

func decode(t testing.TB, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
}

// errorMessage is the message of an error envelope.
func errorMessage(t testing.TB, body string) string {
	t.Helper()
	var e apierror.OpenAIBody
	decode(t, body, &e)
	if e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("not an error envelope: %s", body)
	}
	return e.Error.Message
}

// outcome is one upstream attempt on a pair at a moment.
func outcome(id string, cred, model string, status int, at time.Time) domain.Event {
	return domain.Event{
		V: domain.SchemaVersion, Kind: domain.KindOutcomeRecorded, ID: id, At: at,
		Outcome: &domain.Outcome{Credential: cred, Model: model, Status: status,
			Class: domain.ClassifyStatus(status), LatencyMS: 120, Attempt: 1},
	}
}

// autoBan is the Fail2Ban decision the engine publishes after failures
// outcomes with code on a pair: a ban for d from at (permanent when d is 0).
func autoBan(cred, model string, code, failures int, at time.Time, d time.Duration, causeSeq uint64) domain.Event {
	ban := "permanent"
	if d > 0 {
		ban = domain.ShortDuration(d)
	}
	b := &domain.Ban{
		Credential: cred, Model: model, Origin: domain.OriginFail2Ban, ErrorCode: code,
		Reason: fmt.Sprintf("%d x %d (rule %d: max_attempts %d, ban %s)", failures, code, code, failures, ban),
		Since:  at, Permanent: d == 0, Failures: failures, CauseSeq: causeSeq,
	}
	if d > 0 {
		until := at.Add(d)
		b.Until = &until
	}
	return domain.Event{
		V: domain.SchemaVersion, Kind: domain.KindBanImposed, At: at, Ban: b,
		ID: fmt.Sprintf("f2b/%s/%s/%d", cred, model, causeSeq),
	}
}

// failures publishes n outcomes with code on a pair, then the automatic
// ban they cross the threshold for, lasting d.
func (r *rig) failures(cred, model string, code, n int, d time.Duration) {
	r.t.Helper()
	at := r.clock.Now()
	evs := make([]domain.Event, 0, n+1)
	for range n {
		evs = append(evs, outcome(fmt.Sprintf("o/%d", r.oids.Add(1)), cred, model, code, at))
	}
	r.publish(evs...)
	r.publish(autoBan(cred, model, code, n, at, d, r.live.Load().Seq()))
}
