package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airouter/airouter/adminapi"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/projections"
)

// At moments sampled through a run (traffic, a Fail2Ban ban, an admin
// ban, after the unban), GET /health?at=T and GET /api/bans?at=T answer
// byte for byte what `replay -at T` prints (the same fold, rendered the
// same way), and in every field the log determines what the router served
// live at T.
func TestPastViewsEqualReplayAt(t *testing.T) {
	a, b := newUpstream(t, 200), newUpstream(t, 200)
	extra := "fail2ban:\n  max_attempts: 3\n  ban_duration: 1h\n  error_code_rules:\n    - code: 429\n      max_attempts: 3\n      ban_duration: 30m\n"
	path, cfg := replayConfig(t, eventsAt(tempStore(t), "file", ""), extra, a, b)
	r := start(t, cfg)

	chatUntil(t, r, "four requests", func() bool { return a.calls.Load()+b.calls.Load() >= 4 })
	samples := []healthSample{sampleHealth(t, r, "before the ban")}

	a.status.Store(429)
	failed := a.calls.Load()
	chatUntil(t, r, "three 429s from cred-a", func() bool { return a.calls.Load() >= failed+3 })
	testkit.Eventually(t, "the fail2ban ban of cred-a", func() bool {
		_, ok := r.live.Load().Blocked("cred-a", "gpt-test", time.Now())
		return ok
	})
	samples = append(samples, sampleHealth(t, r, "during the ban"))

	if status, _, body := r.do(t, "POST", "/api/ban", testMasterKey, map[string]any{"credential": "cred-b", "ttl": "30m", "reason": "drain"}); status != 200 {
		t.Fatalf("/api/ban = %d %s", status, body)
	}
	samples = append(samples, sampleHealth(t, r, "both banned"))
	if status, _, body := r.do(t, "POST", "/api/unban", testMasterKey, map[string]any{"credential": "cred-a"}); status != 200 {
		t.Fatalf("/api/unban = %d %s", status, body)
	}
	samples = append(samples, sampleHealth(t, r, "after the unban"))

	for _, s := range samples {
		t.Run(s.name, func(t *testing.T) {
			q := "?at=" + url.QueryEscape(s.at)
			status, _, body := r.do(t, "GET", "/health"+q, "", nil)
			if status != 200 && status != 503 {
				t.Fatalf("/health%s = %d %s", q, status, body)
			}
			out, stderr, err := runCmd(t, "replay", "-config", path, "-at", s.at, "-view", "health")
			if err != nil {
				t.Fatalf("replay: %v\n%s", err, stderr)
			}
			if string(body) != out {
				t.Fatalf("/health%s:\n%s\nreplay -at prints:\n%s", q, body, out)
			}
			if got, want := logDetermined(t, body), logDetermined(t, s.body); !reflect.DeepEqual(got, want) {
				t.Fatalf("/health%s:\n%s\nthe router served at that moment:\n%s", q, body, s.body)
			}
			status, _, bans := r.do(t, "GET", "/api/bans"+q, testMasterKey, nil)
			out, stderr, err = runCmd(t, "replay", "-config", path, "-at", s.at, "-view", "bans")
			if err != nil || status != 200 || string(bans) != out {
				t.Fatalf("/api/bans%s = %d:\n%s\nreplay -at -view bans prints (%v %s):\n%s", q, status, bans, err, stderr, out)
			}
		})
	}
	var h adminapi.Health
	_, _, body := r.do(t, "GET", "/health?at="+url.QueryEscape(samples[1].at), "", nil)
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatal(err)
	}
	if c := h.Credentials["cred-a"]; !c.IsBanned || c.BanOrigin != domain.OriginFail2Ban {
		t.Fatalf("during the ban, cred-a is %+v", c)
	}
	if h.Log.Lag != 0 || !h.Log.Connected || h.Log.LastSeq != h.Log.AppliedSeq {
		t.Fatalf("the log of a past view: %+v", h.Log)
	}
}

// A moment that is not one is 400 naming it; one in the future is 400; one
// before the log's first event is 404 naming the earliest moment the log
// answers for; /api/bans?at= still wants the master key.
func TestPastViewsRefuseMomentsTheyCannotAnswer(t *testing.T) {
	up := newUpstream(t, 200)
	r := start(t, testConfig(t, tempStore(t), "file", "", up))
	if status, _, body := chat(t, r); status != 200 {
		t.Fatalf("chat: %d %s", status, body)
	}
	settle(t, r)
	var first domain.Event
	if err := r.log.Read(context.Background(), 1, 1, func(ev domain.Event, _ uint64) error {
		if first.Kind == "" {
			first = ev
		}
		return nil
	}); err != nil || first.Kind == "" {
		t.Fatalf("read the first event: %+v %v", first, err)
	}
	for _, tc := range []struct {
		path   string
		key    string
		status int
		says   string
	}{
		{"/health?at=yesterday", "", 400, `at: "yesterday" is neither an RFC 3339 time`},
		{"/health?at=", "", 400, "at is empty"},
		{"/health?at=-5m", "", 400, `at: "-5m" is neither`},
		{"/health?at=" + url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339)), "", 400, "is in the future"},
		{"/health?at=" + url.QueryEscape(first.At.Add(-time.Hour).Format(time.RFC3339Nano)), "", 404,
			"it is before the log's first event; the earliest moment it can answer for is " + first.At.Format(time.RFC3339Nano)},
		{"/api/bans?at=1s", "", 401, "master key required"},
		{"/api/bans?at=tomorrow", testMasterKey, 400, `at: "tomorrow"`},
		{"/api/bans?at=" + url.QueryEscape(first.At.Add(-time.Minute).Format(time.RFC3339Nano)), testMasterKey, 404, "the earliest moment it can answer for is "},
		{"/api/timeline?since=soon", "", 400, `since: "soon"`},
		{"/api/timeline?since=1m&until=2m", "", 400, "is not before until"},
	} {
		status, _, body := r.do(t, "GET", tc.path, tc.key, nil)
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		if status != tc.status || !strings.Contains(e.Error.Message, tc.says) {
			t.Errorf("GET %s = %d %s, want %d saying %q", tc.path, status, body, tc.status, tc.says)
		}
	}
	if status, h, _ := r.do(t, "POST", "/api/timeline", "", nil); status != 405 || h.Get("Allow") != "GET" {
		t.Errorf("POST /api/timeline = %d, Allow %q", status, h.Get("Allow"))
	}
	if status, _, body := r.do(t, "GET", "/health?at=0s", "", nil); status != 200 || !strings.Contains(string(body), `"cred-a"`) {
		t.Errorf("/health?at=0s = %d %s", status, body)
	}
}

// gatedHistory is the router's own History, each StateAt held until the
// test lets it go: the views being folded stay in flight.
type gatedHistory struct {
	adminapi.History
	entered chan struct{}
	release chan struct{}
}

func (g gatedHistory) StateAt(ctx context.Context, at time.Time) (*projections.State, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.History.StateAt(ctx, at)
}

// Two views of the past fold at once; a third is 429 with Retry-After
// until one ends. A view that outlasts the timeout is 504.
func TestPastViewsAreCapped(t *testing.T) {
	up := newUpstream(t, 200)
	r := start(t, testConfig(t, tempStore(t), "file", "", up))
	if status, _, body := chat(t, r); status != 200 {
		t.Fatalf("chat: %d %s", status, body)
	}
	settle(t, r)
	g := gatedHistory{History: newLogHistory(r.log), entered: make(chan struct{}), release: make(chan struct{})}
	r.admin.SetHistory(g, adminapi.PastLimits{})

	var wg sync.WaitGroup
	statuses := make([]int, 2)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], _, _ = r.do(t, "GET", "/health?at=0s", "", nil)
		}()
	}
	testkit.Receive(t, "the first view to start folding", g.entered)
	testkit.Receive(t, "the second view to start folding", g.entered)
	for _, path := range []string{"/health?at=0s", "/api/timeline"} {
		status, h, body := r.do(t, "GET", path, "", nil)
		if status != http.StatusTooManyRequests || h.Get("Retry-After") != "1" || !strings.Contains(string(body), "2 views of the past are being folded already") {
			t.Errorf("a third view, %s = %d (Retry-After %q) %s", path, status, h.Get("Retry-After"), body)
		}
	}
	close(g.release)
	wg.Wait()
	if statuses[0] != 200 || statuses[1] != 200 {
		t.Fatalf("the two views answered %v", statuses)
	}
	go func() {
		for range g.entered {
		}
	}()
	if status, _, body := r.do(t, "GET", "/health?at=0s", "", nil); status != 200 {
		t.Fatalf("a view after the others ended = %d %s", status, body)
	}
	close(g.entered)

	r.admin.SetHistory(newLogHistory(r.log), adminapi.PastLimits{Timeout: time.Nanosecond})
	if status, _, body := r.do(t, "GET", "/health?at=0s", "", nil); status != http.StatusGatewayTimeout || !strings.Contains(string(body), "took longer than 1ns") {
		t.Fatalf("a view past its timeout = %d %s", status, body)
	}
}
