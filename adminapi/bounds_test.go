package adminapi

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestBanOnAModelTheCredentialDoesNotServeIs404: an admin ban names a
// model the credential serves (configured, learned or named in the log),
// the wildcard, or any model of a proxy credential; anything else is 404
// and writes nothing to the log.
func TestBanOnAModelTheCredentialDoesNotServeIs404(t *testing.T) {
	r := newRig(t)
	status, _, body := r.do("POST", "/api/ban", "Bearer "+masterKey, `{"credential":"openai-1","model":"made-up-1"}`)
	if status != 404 {
		t.Fatalf("ban on an unknown model: status %d, want 404: %s", status, body)
	}
	if msg := errorMessage(t, body); !strings.Contains(msg, `credential "openai-1" does not serve model "made-up-1"`) {
		t.Errorf("message %q does not name the credential and the model", msg)
	}
	// claude-sonnet is configured, but not on openai-1.
	if status, _, body := r.do("POST", "/api/ban", "Bearer "+masterKey, `{"credential":"openai-1","model":"claude-sonnet"}`); status != 404 {
		t.Fatalf("ban on another credential's model: status %d, want 404: %s", status, body)
	}
	if seq := r.live.Load().Seq(); seq != 0 {
		t.Errorf("a refused ban wrote to the log (seq %d)", seq)
	}

	r.admin("POST", "/api/ban", `{"credential":"relay","model":"made-up-1"}`, 200)
	r.admin("POST", "/api/ban", `{"credential":"openai-1","model":"*"}`, 200)
	r.admin("POST", "/api/ban", `{"credential":"openai-1","model":"gpt-4o-mini"}`, 200)
	r.learn(Pair{Credential: "openai-2", Model: "learned-1"})
	r.admin("POST", "/api/ban", `{"credential":"openai-2","model":"learned-1"}`, 200)
	r.publish(outcome("o/asked", "claude-1", "asked-for", 200, r.clock.Now()))
	r.admin("POST", "/api/ban", `{"credential":"claude-1","model":"asked-for"}`, 200)
	if got := len(r.bans()); got != 5 {
		t.Errorf("bans = %d, want 5", got)
	}
}

// TestManyClientModelNamesStayWithinTheCaps: a config that lists no models
// routes every name a client sends. 20,000 of them, each failing once on two
// credentials (one of them named in the log), leave /metrics and /health within
// maxModelLabels and maxLogPairs; what falls past is counted, and the
// counters aggregate it under model="other". The log keeps at most 2,000
// records of the credential (projections' maxPairs), forgetting the oldest
// failure streaks, counted in airouter_pairs_forgotten_total; the series of
// the forgotten pairs are deleted, those of a credential the log does not
// name stay.
func TestManyClientModelNamesStayWithinTheCaps(t *testing.T) {
	r := newRigEdit(t, func(d *Deps) { d.ConfiguredPairs = nil })
	const names = 20000
	at := r.clock.Now()
	m := r.api.Metrics()
	for i := range names {
		model := fmt.Sprintf("made-up-%05d", i)
		if !r.log.Publish(outcome(fmt.Sprintf("o/%d", i), "openai-1", model, 404, at)) {
			t.Fatalf("outcome %d dropped", i)
		}
		for _, cred := range []string{"openai-1", "openai-2"} {
			m.Attempt(cred, model, "/v1/chat/completions", 404, 10*time.Millisecond)
		}
	}
	if err := r.log.Flush(r.ctx); err != nil {
		t.Fatal(err)
	}
	last, err := r.log.LastSeq(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.live.WaitFor(r.ctx, last); err != nil {
		t.Fatal(err)
	}
	// The bound: at most 2,000 records, forgetting 100 at a time.
	kept := len(r.live.Load().Pairs())
	if kept > 2000 || kept <= 1900 {
		t.Fatalf("the log names %d pairs, want at most 2,000 and more than 1,900", kept)
	}

	_, _, body := r.do("GET", "/metrics", "", "")
	lines := strings.Count(body, "\n")
	// Per model label: 2 credentials x 1 status of requests_total; per
	// shown pair: rpm and tpm; plus a few hundred fixed lines.
	if limit := (maxModelLabels + 1) + 2*(maxLogPairs+2) + 500; lines > limit {
		t.Errorf("/metrics has %d lines, want at most %d", lines, limit)
	}
	got := r.scrape()
	wantMetrics(t, got, map[string]float64{
		`auto_ai_router_requests_total{credential="openai-1",endpoint="/v1/chat/completions",model="other",status="404"}`:         names - maxModelLabels,
		`auto_ai_router_requests_total{credential="openai-2",endpoint="/v1/chat/completions",model="other",status="404"}`:         names - maxModelLabels,
		`auto_ai_router_requests_total{credential="openai-2",endpoint="/v1/chat/completions",model="made-up-00000",status="404"}`: 1,
		`airouter_client_models_unkept_total{kind="pools"}`:                                                                       4,
		`airouter_metric_model_labels_overflow_total`:                                                                             2 * (names - maxModelLabels),
		`airouter_pairs_omitted`:         float64(kept - maxLogPairs),
		`airouter_pairs_forgotten_total`: float64(names - kept),
		`auto_ai_router_model_rpm_current{credential="openai-1",model="other"}`: 0,
	})
	if _, ok := got[`auto_ai_router_requests_total{credential="openai-1",endpoint="/v1/chat/completions",model="made-up-19999",status="404"}`]; ok {
		t.Error("a model past the label limit has its own series")
	}
	for k := range got { // the admitted names are the oldest streaks: all forgotten on openai-1
		if strings.HasPrefix(k, `auto_ai_router_requests_total{credential="openai-1"`) && !strings.Contains(k, `model="other"`) {
			t.Errorf("a forgotten pair's series is still in /metrics: %s", k)
		}
	}

	status, h := r.health()
	if status != 200 {
		t.Errorf("/health status %d", status)
	}
	if h.Log.PairsForgotten != uint64(names-kept) {
		t.Errorf("/health log.pairs_forgotten = %d, want %d", h.Log.PairsForgotten, names-kept)
	}
	if len(h.Models) != maxLogPairs || h.ModelsOmitted != kept-maxLogPairs {
		t.Errorf("/health shows %d pairs and omits %d, want %d and %d", len(h.Models), h.ModelsOmitted, maxLogPairs, kept-maxLogPairs)
	}
	_, _, hb := r.do("GET", "/health", "", "")
	if len(hb) > 512<<10 {
		t.Errorf("/health is %d bytes", len(hb))
	}
}

// TestALiftedBanOnAModelConfigDoesNotRouteLeavesNoSeries: the ban counter
// of a model config does not route goes when its ban is lifted and its
// unban counts under model="other", so bans on many names do not stay in
// /metrics; a routed model's series stay.
func TestALiftedBanOnAModelConfigDoesNotRouteLeavesNoSeries(t *testing.T) {
	r := newRig(t)
	r.publish(outcome("o/asked", "openai-1", "asked-for", 200, r.clock.Now()))
	r.admin("POST", "/api/ban", `{"credential":"openai-1","model":"asked-for","ttl":"1h"}`, 200)
	r.admin("POST", "/api/ban", `{"credential":"openai-1","model":"gpt-4o","ttl":"1h"}`, 200)
	banned := `auto_ai_router_credential_ban_events_total{credential="openai-1",error_code="0",model="asked-for"}`
	routed := `auto_ai_router_credential_ban_events_total{credential="openai-1",error_code="0",model="gpt-4o"}`
	wantMetrics(t, r.scrape(), map[string]float64{banned: 1, routed: 1})

	r.admin("POST", "/api/unban", `{"credential":"openai-1","model":"asked-for"}`, 200)
	r.admin("POST", "/api/unban", `{"credential":"openai-1","model":"gpt-4o"}`, 200)
	got := r.scrape()
	for k := range got {
		if strings.Contains(k, "ban_events_total") && strings.Contains(k, `model="asked-for"`) {
			t.Errorf("the lifted ban left a series in /metrics: %s", k)
		}
	}
	wantMetrics(t, got, map[string]float64{
		routed: 1,
		`auto_ai_router_credential_unban_events_total{credential="openai-1",model="other"}`:  1,
		`auto_ai_router_credential_unban_events_total{credential="openai-1",model="gpt-4o"}`: 1,
	})
}
