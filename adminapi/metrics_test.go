package adminapi

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape reads /metrics into "name{labels}" -> value, labels as the text
// format writes them (sorted).
func (r *rig) scrape() map[string]float64 {
	r.t.Helper()
	status, h, body := r.do("GET", "/metrics", "", "")
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		r.t.Fatalf("/metrics: %d %s", status, h.Get("Content-Type"))
	}
	out := map[string]float64{}
	for _, l := range strings.Split(body, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			r.t.Fatalf("metric line %q: %v", l, err)
		}
		out[l[:i]] = v
	}
	return out
}

func wantMetrics(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("missing %s", k)
		case g != v:
			t.Errorf("%s = %v, want %v", k, g, v)
		}
	}
}

func TestMetricsCountEventsAndReadGaugesAtScrape(t *testing.T) {
	r := newRig(t)
	mixedPool(r)
	m := r.api.Metrics()
	m.Attempt("openai-1", "gpt-4o", "chat.completions", 200, 1200*time.Millisecond)
	m.Attempt("openai-1", "gpt-4o", "chat.completions", 200, 300*time.Millisecond)
	m.Attempt("openai-2", "gpt-4o", "chat.completions", 502, 40*time.Millisecond)
	m.Request(1)
	m.Request(3)
	m.Exhausted(429)

	got := r.scrape()
	wantMetrics(t, got, map[string]float64{
		`auto_ai_router_credential_ban_events_total{credential="openai-1",error_code="429",model="gpt-4o-mini"}`:       1,
		`auto_ai_router_credential_ban_events_total{credential="openai-1",error_code="0",model="*"}`:                   1,
		`auto_ai_router_credential_ban_events_total{credential="claude-1",error_code="401",model="claude-sonnet"}`:     1,
		`auto_ai_router_requests_total{credential="openai-1",endpoint="chat.completions",model="gpt-4o",status="200"}`: 2,
		`auto_ai_router_requests_total{credential="openai-2",endpoint="chat.completions",model="gpt-4o",status="502"}`: 1,
		`auto_ai_router_requests_duration_seconds_count{credential="openai-1",endpoint="chat.completions"}`:            2,
		`auto_ai_router_requests_duration_seconds_bucket{credential="openai-1",endpoint="chat.completions",le="0.5"}`:  1,
		`auto_ai_router_credential_selection_rejected_total{reason="banned"}`:                                          2,
		`auto_ai_router_credential_selection_rejected_total{reason="rate_limited"}`:                                    1,
		`airouter_fallback_hops_count`:                                                      2,
		`airouter_fallback_hops_sum`:                                                        4,
		`airouter_exhausted_requests_total{status="429"}`:                                   1,
		`airouter_cooldown_events_total{credential="openai-2",model="gpt-4o",status="429"}`: 1,
		`airouter_model_bench_events_total{model="gpt-4o-mini"}`:                            1,
		// Gauges, read from the snapshot now.
		`auto_ai_router_credential_banned{credential="openai-1"}`:                1,
		`auto_ai_router_credential_banned{credential="openai-2"}`:                0,
		`auto_ai_router_credential_banned{credential="claude-1"}`:                1,
		`auto_ai_router_credential_rpm_current{credential="openai-1"}`:           12,
		`auto_ai_router_credential_tpm_current{credential="openai-1"}`:           3400,
		`auto_ai_router_model_rpm_current{credential="openai-1",model="gpt-4o"}`: 7,
		`airouter_bans_active{origin="admin"}`:                                   1,
		`airouter_bans_active{origin="fail2ban"}`:                                2,
		`airouter_cooldowns_active`:                                              1,
		`airouter_benched_models`:                                                1,
		`airouter_snapshot_lag_events`:                                           0,
		`airouter_log_connected`:                                                 1,
		`airouter_log_publish_dropped_total`:                                     0,
		`airouter_log_publish_failures_total`:                                    0,
		`airouter_events_skipped_total{reason="unknown_kind"}`:                   0,
	})
	if _, ok := got[`auto_ai_router_credential_rpm_current{credential="relay"}`]; ok {
		t.Error("a proxy credential's usage is exported")
	}
	if v := got[`airouter_snapshot_applied_seq`]; v != float64(r.live.Load().Seq()) || v == 0 {
		t.Errorf("applied seq %v, want %d", v, r.live.Load().Seq())
	}

	// Unban: one count per active ban lifted, with the ban's own model.
	r.admin("POST", "/api/unban", `{"credential":"openai-1"}`, 200)
	// Expiry: the engine's expiry event for a ban that ended.
	r.clock.Advance(11 * time.Minute)
	r.failures("openai-2", "gpt-4o", 503, 3, time.Minute)
	r.clock.Advance(2 * time.Minute)
	r.publish(r.live.Load().ExpiredBans(r.clock.Now())...)
	got = r.scrape()
	wantMetrics(t, got, map[string]float64{
		`auto_ai_router_credential_unban_events_total{credential="openai-1",model="*"}`:           1,
		`auto_ai_router_credential_unban_events_total{credential="openai-1",model="gpt-4o-mini"}`: 1,
		`auto_ai_router_credential_unban_events_total{credential="openai-2",model="gpt-4o"}`:      1,
		`auto_ai_router_credential_banned{credential="openai-1"}`:                                 0,
		`airouter_bans_active{origin="admin"}`:                                                    0,
		`airouter_bans_active{origin="fail2ban"}`:                                                 1,
		`airouter_benched_models`:                                                                 0,
	})
	for k := range got {
		if strings.HasPrefix(k, "auto_ai_router_credential_unban_events_total") && strings.Contains(k, "claude-1") {
			t.Errorf("an unban counted for a ban nobody lifted: %s", k)
		}
	}
}
