package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// streamEvents opens GET /api/events on the router with the master key.
func streamEvents(t *testing.T, r *running, query string, header http.Header) *testkit.SSE {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + testMasterKey}}
	for k, v := range header {
		h[k] = v
	}
	s := testkit.OpenSSE(t, r.url+"/api/events"+query, h)
	if s.Status != http.StatusOK {
		t.Fatalf("GET /api/events%s: %d", query, s.Status)
	}
	return s
}

// logPositions reads every event position of the router's log up to last.
func logPositions(t *testing.T, r *running) []string {
	t.Helper()
	ctx := testkit.Context(t)
	last, err := r.log.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := r.log.Read(ctx, 1, last, func(ev domain.Event, _ uint64) error {
		out = append(out, ev.Pos().String())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// A real router streams its log: a ban follower sees the Fail2Ban ban as
// it is stored, under its log position; a client that disconnects and
// resumes with Last-Event-ID while traffic goes on gets every event of
// the log once, in order; no event carries a configured key.
func TestEventsStreamTheRoutersLog(t *testing.T) {
	bad := newUpstream(t, 500)
	good := newUpstream(t, 200)
	r := start(t, testConfig(t, tempStore(t), "file", "fail2ban:\n  max_attempts: 3\n  ban_duration: 1h\n", bad, good))
	bans := streamEvents(t, r, "?kind=ban", nil)
	all := streamEvents(t, r, "?since=1", nil)

	for i := 0; i < 8; i++ {
		if status, _, body := chat(t, r); status != 200 {
			t.Fatalf("chat: %d %s", status, body)
		}
	}
	testkit.Eventually(t, "cred-a to be banned", func() bool {
		_, banned := r.live.Load().Blocked("cred-a", "gpt-test", time.Now())
		return banned
	})
	ban := bans.Next(t)
	var ev domain.Event
	if err := json.Unmarshal([]byte(ban.Data), &ev); err != nil || ban.Event != string(domain.KindBanImposed) ||
		ev.Ban.Credential != "cred-a" || ev.Ban.Origin != domain.OriginFail2Ban {
		t.Fatalf("ban event %+v (%v)", ban, err)
	}
	var stored domain.Event
	err := r.log.Read(context.Background(), 1, 0, func(e domain.Event, _ uint64) error {
		if e.Pos().String() == ban.ID {
			stored = e
		}
		return nil
	})
	if err != nil || stored.Kind != domain.KindBanImposed || stored.ID != ev.ID {
		t.Fatalf("the log holds %+v at %s, the stream sent %s (%v)", stored, ban.ID, ev.ID, err)
	}

	var got []string
	var data strings.Builder
	read := func(s *testkit.SSE, n int) {
		for i := 0; i < n; i++ {
			e := s.Next(t)
			got = append(got, e.ID)
			data.WriteString(e.Data)
		}
	}
	read(all, 5)
	all.Close()
	for i := 0; i < 5; i++ {
		chat(t, r)
	}
	resumed := streamEvents(t, r, "?since=1", http.Header{"Last-Event-ID": {got[len(got)-1]}})
	for i := 0; i < 5; i++ {
		chat(t, r)
	}
	settle(t, r)
	want := logPositions(t, r)
	read(resumed, len(want)-len(got))
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("positions streamed across the reconnect:\n%v\nthe log's:\n%v", got, want)
	}
	for _, secret := range []string{"sk-upstream-secret", testMasterKey} {
		if strings.Contains(data.String(), secret) {
			t.Fatalf("an event carries %q", secret)
		}
	}

	for _, tc := range []struct {
		key, query string
		status     int
	}{{"", "", 401}, {testMasterKey, "?since=soon", 400}} {
		if status, _, body := r.do(t, "GET", "/api/events"+tc.query, tc.key, nil); status != tc.status {
			t.Errorf("GET /api/events%s (with key: %v): %d %s, want %d", tc.query, tc.key != "", status, body, tc.status)
		}
	}
}
