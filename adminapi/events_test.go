package adminapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/transport/eventlog"
)

// testEventLog is the rig's real eventlog.Log as the EventLog port, as
// the wiring adapts it.
type testEventLog struct{ l *eventlog.Log }

func (e testEventLog) Consume(ctx context.Context, from uint64, fn func(domain.Event, uint64)) (func(), error) {
	return e.l.Consume(ctx, from, fn)
}
func (e testEventLog) LastSeq(ctx context.Context) (uint64, error) { return e.l.LastSeq(ctx) }
func (e testEventLog) SeqAt(ctx context.Context, t time.Time) (uint64, error) {
	return e.l.SeqAt(ctx, t)
}

// eventsRig is the rig serving GET /api/events with o over its log, on
// its fake clock.
func eventsRig(t *testing.T, o EventsOptions) *rig {
	t.Helper()
	r := newRig(t)
	m := mux.NewRouter()
	r.api.Register(m)
	o.Log = testEventLog{r.log}
	o.Clock = r.clock
	r.api.RegisterEvents(m, o)
	r.srv.Close()
	r.srv = httptest.NewServer(m)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *rig) stream(t *testing.T, query string, header http.Header) *testkit.SSE {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + masterKey}}
	for k, v := range header {
		h[k] = v
	}
	s := testkit.OpenSSE(t, r.srv.URL+"/api/events"+query, h)
	if s.Status != http.StatusOK {
		t.Fatalf("GET /api/events%s: %d", query, s.Status)
	}
	return s
}

func adminBan(i int, cred string) domain.Event {
	until := t0.Add(time.Hour)
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindBanImposed, ID: fmt.Sprintf("admin-sse/%d", i), At: t0,
		Ban: &domain.Ban{Credential: cred, Model: "gpt-4o", Origin: domain.OriginAdmin, Reason: "admin: drain", Since: t0, Until: &until}}
}

// A stream from a position delivers every event from it with its position
// as id and its kind as event name; Last-Event-ID resumes right after the
// event it names, and new events follow live.
func TestEventsFromAPositionAndResume(t *testing.T) {
	r := eventsRig(t, EventsOptions{})
	var seqs []uint64
	for i := 1; i <= 3; i++ {
		seq, err := r.log.PublishControl(r.ctx, adminBan(i, "openai-1"))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	s := r.stream(t, "?since="+strconv.FormatUint(seqs[0], 10), nil)
	for i, seq := range seqs {
		ev := s.Next(t)
		if ev.ID != strconv.FormatUint(seq, 10) || ev.Event != string(domain.KindBanImposed) {
			t.Fatalf("event %d: id %q event %q, want id %d", i, ev.ID, ev.Event, seq)
		}
		var got domain.Event
		if err := json.Unmarshal([]byte(ev.Data), &got); err != nil || got.ID != fmt.Sprintf("admin-sse/%d", i+1) || got.Ban.Credential != "openai-1" {
			t.Fatalf("event %d data %s (%v)", i, ev.Data, err)
		}
	}
	s.Close()

	resumed := r.stream(t, "?since="+strconv.FormatUint(seqs[0], 10), http.Header{"Last-Event-ID": {strconv.FormatUint(seqs[1], 10)}})
	if ev := resumed.Next(t); ev.ID != strconv.FormatUint(seqs[2], 10) {
		t.Fatalf("resumed after %d at %s, want %d", seqs[1], ev.ID, seqs[2])
	}
	seq, err := r.log.PublishControl(r.ctx, adminBan(4, "openai-2"))
	if err != nil {
		t.Fatal(err)
	}
	if ev := resumed.Next(t); ev.ID != strconv.FormatUint(seq, 10) {
		t.Fatalf("live event id %s, want %d", ev.ID, seq)
	}

	// From now: only what is stored after the request.
	now := r.stream(t, "", nil)
	seq, err = r.log.PublishControl(r.ctx, adminBan(5, "openai-1"))
	if err != nil {
		t.Fatal(err)
	}
	if ev := now.Next(t); ev.ID != strconv.FormatUint(seq, 10) {
		t.Fatalf("from now: first id %s, want %d", ev.ID, seq)
	}
}

// kind, credential and model filter, each repeatable or a comma list; an
// outcome batch's events carry their index in the id.
func TestEventsFilters(t *testing.T) {
	r := eventsRig(t, EventsOptions{})
	s := r.stream(t, "?kind=outcome&credential=openai-2,claude-1&model=gpt-4o&model=claude-3", nil)
	all := r.stream(t, "?kind=outcome.recorded", nil)
	for i, p := range []domain.Key{{Credential: "openai-1", Model: "gpt-4o"}, {Credential: "openai-2", Model: "gpt-4o"},
		{Credential: "openai-2", Model: "gpt-4o-mini"}, {Credential: "claude-1", Model: "claude-3"}} {
		r.log.Publish(domain.Event{V: domain.SchemaVersion, Kind: domain.KindOutcomeRecorded, At: t0.Add(time.Duration(i) * time.Second),
			Outcome: &domain.Outcome{Credential: p.Credential, Model: p.Model, Status: 500, Class: domain.ClassServerError, Attempt: 1}})
	}
	if err := r.log.Flush(r.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.log.PublishControl(r.ctx, adminBan(1, "openai-2")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, want := range []string{"openai-2/gpt-4o", "claude-1/claude-3"} {
		ev := s.Next(t)
		var e domain.Event
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Outcome.Credential+"/"+e.Outcome.Model)
		if got[len(got)-1] != want || ev.Event != string(domain.KindOutcomeRecorded) {
			t.Fatalf("filtered stream: %v (event %s)", got, ev.Event)
		}
	}
	ids := map[string]bool{}
	for i := 0; i < 4; i++ {
		ev := all.Next(t)
		if ev.Event != string(domain.KindOutcomeRecorded) || ids[ev.ID] {
			t.Fatalf("kind filter or ids: %+v (seen %v)", ev, ids)
		}
		ids[ev.ID] = true
	}
	select {
	case ev := <-s.Events:
		if ev.Comment == "" {
			t.Fatalf("filtered stream got %+v", ev)
		}
	default:
	}
}

// Bad requests are 4xx naming what is wrong, never a stream.
func TestEventsBadRequests(t *testing.T) {
	r := eventsRig(t, EventsOptions{})
	for _, tc := range []struct {
		path, auth, lastID string
		status             int
		want               string
	}{
		{"/api/events?since=yesterday", "Bearer " + masterKey, "", 400, `since: \"yesterday\"`},
		{"/api/events?since=-5m", "Bearer " + masterKey, "", 400, "since"},
		{"/api/events?kind=bans", "Bearer " + masterKey, "", 400, `kind: unknown kind \"bans\"`},
		{"/api/events", "Bearer " + masterKey, "abc", 400, `Last-Event-ID \"abc\"`},
		{"/api/events", "Bearer " + masterKey, "4.x", 400, "Last-Event-ID"},
		{"/api/events", "", "", 401, "master key required"},
		{"/api/events", "Bearer sk-client", "", 403, "master key required"},
	} {
		req, _ := http.NewRequestWithContext(r.ctx, "GET", r.srv.URL+tc.path, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		if tc.lastID != "" {
			req.Header.Set("Last-Event-ID", tc.lastID)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s (Last-Event-ID %q): %d %s, want %d naming %s", tc.path, tc.lastID, res.StatusCode, body, tc.status, tc.want)
		}
	}
	if status, _, _ := r.do("POST", "/api/events", "Bearer "+masterKey, ""); status != 405 {
		t.Errorf("POST: %d", status)
	}
}

// An idle stream gets a heartbeat comment every Heartbeat of the clock.
func TestEventsHeartbeat(t *testing.T) {
	r := eventsRig(t, EventsOptions{})
	s := r.stream(t, "", nil)
	if err := r.clock.BlockUntilContext(r.ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(DefaultEventsHeartbeat)
	for {
		ev := testkit.Receive(t, "a heartbeat", s.Events)
		if ev.Comment == "heartbeat" {
			return
		}
	}
}

// Past Subscribers streams the next is 503; a closed one frees its slot.
// airouter_event_streams counts the open ones, and the refusal is counted.
func TestEventsSubscriberLimit(t *testing.T) {
	r := eventsRig(t, EventsOptions{Subscribers: 2})
	a := r.stream(t, "", nil)
	r.stream(t, "", nil)
	status, _, body := r.do("GET", "/api/events", "Bearer "+masterKey, "")
	if status != 503 || !strings.Contains(body, "the limit is 2") {
		t.Fatalf("third stream: %d %s", status, body)
	}
	wantMetrics(t, r.scrape(), map[string]float64{"airouter_event_streams": 2, "airouter_event_streams_refused_total": 1})
	a.Close()
	testkit.Eventually(t, "the closed stream to leave the gauge", func() bool { return r.scrape()["airouter_event_streams"] == 1 })
	testkit.Eventually(t, "a slot to free", func() bool {
		s := testkit.OpenSSE(t, r.srv.URL+"/api/events", http.Header{"Authorization": {"Bearer " + masterKey}})
		defer s.Close()
		return s.Status == 200
	})
}

// A client that stops reading is cut once its buffer is full, instead of
// the server holding the log for it; airouter_event_streams_cut_total
// counts it.
func TestEventsCutsASlowClient(t *testing.T) {
	r := eventsRig(t, EventsOptions{Buffer: 8})
	req, _ := http.NewRequestWithContext(r.ctx, "GET", r.srv.URL+"/api/events?since=1", nil)
	req.Header.Set("Authorization", "Bearer "+masterKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("open: %v", err)
	}
	defer res.Body.Close()
	const n = 40000
	for i := 0; i < n; i++ {
		r.log.Publish(domain.Event{V: domain.SchemaVersion, Kind: domain.KindOutcomeRecorded, At: t0,
			Outcome: &domain.Outcome{Credential: "openai-1", Model: "gpt-4o", Status: 500, Class: domain.ClassServerError,
				Attempt: 1, RequestID: fmt.Sprintf("req-%06d-padding-padding-padding-padding", i)}})
	}
	if err := r.log.Flush(r.ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the slow stream to be cut", func() bool { return strings.Contains(r.logs.String(), "event stream cut") })
	done := make(chan int, 1)
	go func() {
		b, _ := io.ReadAll(res.Body)
		done <- strings.Count(string(b), "\nevent: ")
	}()
	if got := testkit.Receive(t, "the cut stream to end", done); got >= n {
		t.Fatalf("the cut stream delivered all %d events", got)
	}
	testkit.Eventually(t, "the cut stream counted and closed", func() bool {
		m := r.scrape()
		return m["airouter_event_streams_cut_total"] == 1 && m["airouter_event_streams"] == 0
	})
}
