package adminapi

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// publishOutcomes sends outcomes through the log's batching publisher and
// waits until the projections have folded them.
func (r *rig) publishOutcomes(evs ...domain.Event) {
	r.t.Helper()
	for _, ev := range evs {
		if !r.log.Publish(ev) {
			r.t.Fatalf("outcome %s dropped", ev.ID)
		}
	}
	if err := r.log.Flush(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	last, err := r.log.LastSeq(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.live.WaitFor(r.ctx, last); err != nil {
		r.t.Fatal(err)
	}
}

// TestADroppedClientNamedPairLeavesNoSeries: when the log's state drops a
// pair of a model config does not route, its series go from /metrics:
// forgotten with its failure counts (the credential reached its bound on
// records, the pair's streak was the oldest) or dropped holding nothing
// (at the bound, the least recently used such record). A routed model's
// series stay, though the log forgot its record as well; the forgotten
// records are counted. A name that succeeds keeps its record and series
// until then.
func TestADroppedClientNamedPairLeavesNoSeries(t *testing.T) {
	r := newRig(t)
	m := r.api.Metrics()
	now := r.clock.Now()
	const chat = "/v1/chat/completions"
	for _, model := range []string{"asked-for", "gpt-4o"} {
		m.Attempt("openai-1", model, chat, 500, time.Millisecond)
		m.Tokens("openai-1", model, 10, 0, 0, 0)
		r.publishOutcomes(outcome("o/"+model, "openai-1", model, 500, now))
	}
	series := func(model, status string) string {
		return fmt.Sprintf(`auto_ai_router_requests_total{credential="openai-1",endpoint="%s",model="%s",status="%s"}`, chat, model, status)
	}
	tokens := func(model string) string {
		return fmt.Sprintf(`auto_ai_router_input_tokens_total{credential="openai-1",model="%s"}`, model)
	}
	wantMetrics(t, r.scrape(), map[string]float64{
		series("asked-for", "500"): 1, tokens("asked-for"): 10, series("gpt-4o", "500"): 1, tokens("gpt-4o"): 10,
		`airouter_pairs_forgotten_total`: 0,
	})

	// 2,000 more failing names bring openai-1 to its bound: the oldest
	// streaks (asked-for's and gpt-4o's first) are forgotten.
	evs := make([]domain.Event, 0, 2000)
	for i := range 2000 {
		evs = append(evs, outcome(fmt.Sprintf("o/%d", i), "openai-1", fmt.Sprintf("name-%04d", i), 500, now))
	}
	r.publishOutcomes(evs...)
	snap := r.live.Load()
	if snap.Named(domain.Key{Credential: "openai-1", Model: "asked-for"}) {
		t.Fatal("the log still names openai-1/asked-for")
	}
	got := r.scrape()
	for k := range got {
		if strings.Contains(k, `model="asked-for"`) {
			t.Errorf("the forgotten pair left a series in /metrics: %s", k)
		}
	}
	wantMetrics(t, got, map[string]float64{
		series("gpt-4o", "500"): 1, tokens("gpt-4o"): 10,
		`airouter_pairs_forgotten_total`: float64(snap.PairsForgotten()),
	})
	if snap.PairsForgotten() == 0 {
		t.Error("nothing counted as forgotten")
	}

	// A name that succeeds holds nothing: it keeps its record and series
	// until the credential is at its bound again, when it goes before the
	// streaks, though they began before its last use.
	m.Attempt("openai-1", "quiet-name", chat, 200, time.Millisecond)
	m.Tokens("openai-1", "quiet-name", 5, 1, 0, 0)
	r.publishOutcomes(outcome("o/quiet", "openai-1", "quiet-name", 200, now))
	quiet := domain.Key{Credential: "openai-1", Model: "quiet-name"}
	if !r.live.Load().Named(quiet) {
		t.Fatal("the log dropped openai-1/quiet-name below its bound")
	}
	wantMetrics(t, r.scrape(), map[string]float64{series("quiet-name", "200"): 1, tokens("quiet-name"): 5})
	evs = evs[:0]
	for i := range 100 {
		evs = append(evs, outcome(fmt.Sprintf("o/more-%d", i), "openai-1", fmt.Sprintf("more-%04d", i), 500, now))
	}
	r.publishOutcomes(evs...)
	if r.live.Load().Named(quiet) {
		t.Fatal("the log still names openai-1/quiet-name at its bound")
	}
	for k := range r.scrape() {
		if strings.Contains(k, `model="quiet-name"`) {
			t.Errorf("the dropped quiet pair left a series in /metrics: %s", k)
		}
	}

	// The name used again starts its series again, from nothing.
	m.Attempt("openai-1", "quiet-name", chat, 200, time.Millisecond)
	m.Tokens("openai-1", "quiet-name", 7, 0, 0, 0)
	wantMetrics(t, r.scrape(), map[string]float64{series("quiet-name", "200"): 1, tokens("quiet-name"): 7})
}
