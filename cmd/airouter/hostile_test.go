package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/internal/testkit"
)

// getEvents opens GET /api/events with query q and answers the status and
// the first bytes of the body.
func getEvents(t *testing.T, r *running, q string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", r.url+"/api/events"+q, nil)
	req.Header.Set("Authorization", "Bearer "+testMasterKey)
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET /api/events%s: %v", q, err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 2048)
	n, _ := resp.Body.Read(buf)
	return resp.StatusCode, string(buf[:n])
}

// The endpoints of this session reject, with a 400 naming it, a query
// parameter they do not take, and one they take once given twice (as
// /health does), rather than ignoring it.
func TestNewEndpointsRejectUnknownAndRepeatedQueryParameters(t *testing.T) {
	a := newUpstream(t, 200)
	f := newReloadFile(t)
	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	var logs testkit.Buffer
	r := startFromFile(t, f, &logs)
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/api/bans?bogus=1", `\"bogus\"`},
		{"GET", "/api/bans?at=1m&bogus=1", `\"bogus\"`},
		{"GET", "/api/bans?at=1m&at=2m", "at is given 2 times"},
		{"GET", "/api/timeline?bogus=1", `\"bogus\"`},
		{"GET", "/api/timeline?since=1m&since=2m", "since is given 2 times"},
		{"GET", "/api/timeline?until=1m&until=2m", "until is given 2 times"},
		{"POST", "/api/reload?bogus=1", `\"bogus\"`},
	} {
		st, _, body := r.do(t, c.method, c.path, testMasterKey, nil)
		if st != 400 || !strings.Contains(string(body), c.want) {
			t.Errorf("%s %s = %d %s, want 400 naming %s", c.method, c.path, st, body, c.want)
		}
	}
	for _, c := range []struct{ q, want string }{
		{"?bogus=1", `\"bogus\"`},
		{"?since=1m&since=5", "since is given 2 times"},
	} {
		if st, body := getEvents(t, r, c.q); st != 400 || !strings.Contains(body, c.want) {
			t.Errorf("GET /api/events%s = %d %s, want 400 naming %s", c.q, st, body, c.want)
		}
	}
	// What they do take still works.
	if st, _, body := r.do(t, "GET", "/api/bans", testMasterKey, nil); st != 200 {
		t.Errorf("GET /api/bans = %d %s", st, body)
	}
	if st, body := getEvents(t, r, "?kind=ban&kind=unban&credential=cred-a&model=gpt-test"); st != 200 {
		t.Errorf("GET /api/events with repeated filters = %d %s", st, body)
	}
}

// The zero time (0001-01-01T00:00:00Z) as a moment is refused: the log
// reads it as no bound, so ?at= answered today's state stamped year 1 and
// /api/events?since= streamed from now.
func TestZeroMomentIsRefusedNotReadAsNow(t *testing.T) {
	a := newUpstream(t, 200)
	f := newReloadFile(t)
	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	var logs testkit.Buffer
	r := startFromFile(t, f, &logs)
	for _, p := range []string{
		"/health?at=0001-01-01T00:00:00Z", "/api/bans?at=0001-01-01T00:00:00Z",
		"/api/bans?at=0001-01-01T01:00:00%2B01:00", "/api/timeline?since=0001-01-01T00:00:00Z",
	} {
		st, _, body := r.do(t, "GET", p, testMasterKey, nil)
		if st != 400 || !strings.Contains(string(body), "zero time") {
			t.Errorf("GET %s = %d %s, want 400 (the zero time)", p, st, body)
		}
	}
	if st, body := getEvents(t, r, "?since=0001-01-01T00:00:00Z"); st != 400 || !strings.Contains(body, "zero time") {
		t.Errorf("GET /api/events?since=0001-01-01T00:00:00Z = %d %s, want 400 (the zero time)", st, body)
	}
}

// A since too long to be a moment is refused without echoing it whole.
func TestEventsSinceTooLongIsNotEchoed(t *testing.T) {
	a := newUpstream(t, 200)
	f := newReloadFile(t)
	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	var logs testkit.Buffer
	r := startFromFile(t, f, &logs)
	st, body := getEvents(t, r, "?since="+strings.Repeat("x", 5000))
	if st != 400 || len(body) > 400 {
		t.Errorf("GET /api/events?since=<5000 x> = %d, %d bytes: %.200s", st, len(body), body)
	}
}

// POST /api/reload takes no fields: a body with one, or one that is not
// JSON, is a 400 naming the problem and reloads nothing; no body or {} is
// a reload.
func TestReloadRejectsABodyWithFields(t *testing.T) {
	a := newUpstream(t, 200)
	f := newReloadFile(t)
	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	var logs testkit.Buffer
	r := startFromFile(t, f, &logs)
	for _, c := range []struct {
		body any
		want string
	}{
		{map[string]any{"path": "/etc/passwd"}, `unknown field \"path\"`},
		{"not an object", "takes no body"},
		{[]int{1}, "takes no body"},
	} {
		st, _, body := r.do(t, "POST", "/api/reload", testMasterKey, c.body)
		if st != 400 || !strings.Contains(string(body), c.want) {
			t.Errorf("POST /api/reload %v = %d %s, want 400 with %s", c.body, st, body, c.want)
		}
	}
	if strings.Contains(reloadsMetric(t, r, "error"), " 1") {
		t.Errorf("a refused request body counted as a reload: %s", reloadsMetric(t, r, "error"))
	}
	for _, b := range []any{nil, map[string]any{}} {
		if st, _, body := r.do(t, "POST", "/api/reload", testMasterKey, b); st != 200 {
			t.Errorf("POST /api/reload %v = %d %s, want 200", b, st, body)
		}
	}
}

// A file with a great many problems is refused with a bounded answer and
// log line: the first config.MaxShownProblems of them and their count.
func TestReloadOfAFileWithManyProblemsIsBounded(t *testing.T) {
	a := newUpstream(t, 200)
	f := newReloadFile(t)
	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	var logs testkit.Buffer
	r := startFromFile(t, f, &logs)
	writeFile(t, f.path, strings.Repeat("bogus: 1\n", 20000))
	st, out, body := postReload(t, r)
	if st != 400 {
		t.Fatalf("reload = %d %.300s", st, body)
	}
	if n := len(out["problems"].([]any)); n > 100 || len(body) > 64<<10 {
		t.Errorf("the refusal lists %d problems in %d bytes, want at most 100 in 64 KiB", n, len(body))
	}
	if !strings.Contains(body, "20002 problems") || !strings.Contains(body, "more") {
		t.Errorf("the refusal does not count the problems: %.300s", body)
	}
	if len(logs.String()) > 256<<10 {
		t.Errorf("the log took %d bytes for one refused reload", len(logs.String()))
	}
}
