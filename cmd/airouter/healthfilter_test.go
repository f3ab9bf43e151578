package main

import (
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/airouter/airouter/adminapi"
)

// On the running router, /health's filters narrow the live document and
// the document of a moment in the past alike, and an unknown parameter is
// a 400 naming it.
func TestHealthFiltersOnTheRouter(t *testing.T) {
	a, b := newUpstream(t, 200), newUpstream(t, 200)
	_, cfg := replayConfig(t, eventsAt(tempStore(t), "file", ""), "", a, b)
	r := start(t, cfg)
	if status, _, body := r.do(t, "POST", "/api/ban", testMasterKey, map[string]any{"credential": "cred-b", "model": "gpt-test", "ttl": "30m", "reason": "drain"}); status != 200 {
		t.Fatalf("/api/ban = %d %s", status, body)
	}
	banned := sampleHealth(t, r, "cred-b banned")
	if status, _, body := r.do(t, "POST", "/api/unban", testMasterKey, map[string]any{"credential": "cred-b", "model": "gpt-test"}); status != 200 {
		t.Fatalf("/api/unban = %d %s", status, body)
	}
	settle(t, r)
	get := func(q string) (int, adminapi.Health) {
		t.Helper()
		status, _, body := r.do(t, "GET", "/health?"+q, "", nil)
		var h adminapi.Health
		if status == 200 {
			if err := json.Unmarshal(body, &h); err != nil {
				t.Fatalf("/health?%s: %v %s", q, err, body)
			}
		}
		return status, h
	}
	cases := []struct{ q, creds, models string }{
		{"credential=cred-a", "cred-a", "cred-a:gpt-test"},
		{"model=gpt-test", "cred-a cred-b", "cred-a:gpt-test cred-b:gpt-test"},
		{"banned=true", "", ""}, // nothing is banned now
		{"at=" + url.QueryEscape(banned.at) + "&banned=true", "cred-b", "cred-b:gpt-test"},
		{"at=" + url.QueryEscape(banned.at) + "&credential=cred-a&banned=true", "", ""},
	}
	for _, c := range cases {
		status, h := get(c.q)
		got := strings.Join(slices.Sorted(maps.Keys(h.Credentials)), " ")
		gotModels := strings.Join(slices.Sorted(maps.Keys(h.Models)), " ")
		if status != 200 || h.Status != "healthy" || h.TotalCredentials != 2 || got != c.creds || gotModels != c.models {
			t.Errorf("/health?%s = %d %q total %d, credentials %q models %q; want 200 healthy 2, %q %q",
				c.q, status, h.Status, h.TotalCredentials, got, gotModels, c.creds, c.models)
		}
	}
	if status, _, body := r.do(t, "GET", "/health?cred=cred-a", "", nil); status != 400 || !strings.Contains(string(body), `unknown query parameter \"cred\"`) {
		t.Errorf("/health?cred=cred-a = %d %s, want 400 naming cred", status, body)
	}
}
