package adminapi

import (
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

func TestFallbackSettingsChangeAtRuntime(t *testing.T) {
	r := newRig(t)
	if got := r.admin("GET", "/api/fallback", "", 200); got != `{"max_hops":20,"time_budget":"45s","expose_detail_headers":false}`+"\n" {
		t.Errorf("defaults: %s", got)
	}
	got := r.admin("PUT", "/api/fallback", `{"max_hops":3,"time_budget":"1m30s"}`, 200)
	if got != `{"max_hops":3,"time_budget":"1m30s","expose_detail_headers":false}`+"\n" {
		t.Errorf("after PUT: %s", got)
	}
	// The change is an event, already applied when the PUT answers: the
	// proxy's next request reads it.
	want := domain.FallbackSettings{MaxHops: 3, TimeBudget: domain.Duration(90 * time.Second)}
	if s := r.api.Settings(); s != want {
		t.Errorf("Settings() = %+v", s)
	}
	if s, ok := r.live.Load().Settings(); !ok || s != want {
		t.Errorf("snapshot settings = %+v %v", s, ok)
	}
	// A partial change keeps the rest.
	got = r.admin("PUT", "/api/fallback", `{"expose_detail_headers":true}`, 200)
	if got != `{"max_hops":3,"time_budget":"1m30s","expose_detail_headers":true}`+"\n" {
		t.Errorf("partial PUT: %s", got)
	}
	got = r.admin("PUT", "/api/fallback", `{"time_budget":"0s","max_hops":1}`, 200)
	if got != `{"max_hops":1,"time_budget":"0s","expose_detail_headers":true}`+"\n" {
		t.Errorf("no budget: %s", got)
	}
	if got := r.admin("GET", "/api/fallback", "", 200); got != `{"max_hops":1,"time_budget":"0s","expose_detail_headers":true}`+"\n" {
		t.Errorf("GET after PUTs: %s", got)
	}
	var changed int
	for _, l := range r.logs.lines(t) {
		if l["@message"] == "Fallback settings changed" {
			changed++
		}
	}
	if changed != 3 {
		t.Errorf("%d settings log lines, want 3", changed)
	}
}

func TestFallbackSettingsRejectBadChanges(t *testing.T) {
	r := newRig(t)
	cases := []struct {
		body   string
		status int
		msg    string
	}{
		{``, 400, "request body required"},
		{`{}`, 400, "nothing to change"},
		{`{"max_hops":0}`, 400, "max_hops 0 must be at least 1"},
		{`{"max_hops":-2}`, 400, "must be at least 1"},
		{`{"max_hops":2.5}`, 400, "invalid JSON"},
		{`{"time_budget":"-1s"}`, 400, "must not be negative"},
		{`{"time_budget":"later"}`, 400, `time_budget "later" is not a Go duration`},
		{`{"time_budget":45}`, 400, "time_budget must be a Go duration string"},
		{`{"max_hops":3,"retries":2}`, 400, `unknown field "retries"`},
		{`{"expose_detail_headers":"yes"}`, 400, "invalid JSON"},
		{`{"max_hops":3,"time_budget":"10s"} x`, 400, "invalid JSON"},
		{`{"max_hops":3,"pad":"` + strings.Repeat("x", 64<<10) + `"}`, 413, "larger than 64 KiB"},
	}
	for _, c := range cases {
		status, _, body := r.do("PUT", "/api/fallback", "Bearer "+masterKey, c.body)
		if status != c.status {
			t.Errorf("%.60s: status %d, want %d: %s", c.body, status, c.status, body)
			continue
		}
		if msg := errorMessage(t, body); !strings.Contains(msg, c.msg) {
			t.Errorf("%.60s: message %q does not say %q", c.body, msg, c.msg)
		}
	}
	if _, ok := r.live.Load().Settings(); ok {
		t.Error("a rejected change reached the log")
	}
}
