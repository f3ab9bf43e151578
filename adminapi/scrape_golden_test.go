package adminapi

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// TestMetricsGolden: the /metrics text of a router in a mixed state (bans
// of each origin, a cooldown, a bench, a shadow ban, a proxy credential's
// learned model, pairs only the log names past maxLogPairs, a credential
// the config no longer has, and counters fed by requests) is the golden
// file's byte for byte: what a scrape exports (names, labels, values,
// help and types) does not depend on how the collector computes it. The
// process and Go runtime families change from run to run and are left
// out.
func TestMetricsGolden(t *testing.T) {
	r := newRigEdit(t, func(d *Deps) {
		d.Credentials = append(append([]Credential(nil), testCreds...), Credential{Name: "zeta-1", Type: "openai"})
	})
	mixedPool(r)
	at := r.clock.Now()
	until := at.Add(5 * time.Minute)
	r.publish(domain.Event{V: domain.SchemaVersion, Kind: domain.KindBanShadowed, ID: "shadow/openai-2/gpt-4o/1", At: at,
		Shadowed: &domain.Ban{Credential: "openai-2", Model: "gpt-4o", Origin: domain.OriginFail2Ban,
			Reason: "2 x 400 (rule 400: max_attempts 2, ban 5m)", ErrorCode: 400, Since: at, Until: &until, Failures: 2}})
	r.learn(Pair{Credential: "relay", Model: "llama-3"})

	// Pairs only the log names: a few on claude-1, openai-1 and openai-2,
	// most on the relay (shown, but a proxy credential has no usage
	// gauges), then zeta-1's, past the bound, and a held pair on each of
	// zeta-1 (a cooldown) and claude-1 (its own ban), shown first though
	// zeta-1's sorts last. openai-1's credential-wide ban holds none of
	// its pairs.
	var evs []domain.Event
	logged := func(cred, model string) {
		evs = append(evs, outcome(fmt.Sprintf("o/%s/%s", cred, model), cred, model, 200, at))
	}
	for i := range 5 {
		logged("claude-1", fmt.Sprintf("client-%02d", i))
		logged("openai-1", fmt.Sprintf("client-%02d", i))
		logged("openai-2", fmt.Sprintf("client-%02d", i))
	}
	for i := range maxLogPairs - 20 {
		logged("relay", fmt.Sprintf("relayed-%04d", i))
	}
	for i := range 30 {
		logged("zeta-1", fmt.Sprintf("client-%02d", i))
	}
	logged("gone-1", "gpt-4o")
	r.publish(evs...)
	r.publish(domain.Event{V: domain.SchemaVersion, Kind: domain.KindCooldownStarted, ID: "cooldown/zeta-1/zz-cooling/1", At: at,
		Cooldown: &domain.Cooldown{Credential: "zeta-1", Model: "zz-cooling", Until: at.Add(time.Minute), Status: 503, CauseSeq: 1}})
	r.failures("claude-1", "zz-banned", 500, 3, time.Hour)
	r.mu.Lock()
	for k, u := range map[domain.Key][2]int{
		{Credential: "claude-1", Model: "client-00"}:     {4, 80},
		{Credential: "zeta-1", Model: "zz-cooling"}:      {1, 9},
		{Credential: "relay", Model: "relayed-0000"}:     {6, 60},
		{Credential: "zeta-1"}:                           {9, 130},
		{Credential: "zeta-1", Model: "client-02"}:       {3, 30},
		{Credential: "zeta-1", Model: "client-28"}:       {2, 40},
		{Credential: "zeta-1", Model: "client-29"}:       {5, 50},
		{Credential: "openai-2", Model: "gpt-4o"}:        {3, 900},
		{Credential: "openai-1", Model: "gpt-4o-mini"}:   {2, 11},
		{Credential: "claude-1", Model: "claude-sonnet"}: {1, 120},
	} {
		r.usage[k] = u
	}
	r.mu.Unlock()

	m := r.api.Metrics()
	m.Attempt("openai-1", "gpt-4o", "chat.completions", 200, 1200*time.Millisecond)
	m.Attempt("openai-2", "gpt-4o", "chat.completions", 502, 40*time.Millisecond)
	m.Attempt("zeta-1", "client-29", "chat.completions", 200, 300*time.Millisecond)
	m.Tokens("openai-1", "gpt-4o", 12, 30, 20, 8)
	m.Aborted("openai-2", "gpt-4o", "chat.completions")
	m.Request(1)
	m.Request(3)
	m.Exhausted(429)

	if !r.live.Load().Named(domain.Key{Credential: "zeta-1", Model: "client-29"}) {
		t.Fatal("the log does not name zeta-1/client-29")
	}
	h := r.api.Health()
	if h.ModelsOmitted == 0 {
		t.Fatal("no pair is past maxLogPairs")
	}
	status, _, body := r.do("GET", "/metrics", "", "")
	if status != 200 {
		t.Fatalf("/metrics: %d", status)
	}
	got := withoutRuntime(body)
	for _, want := range []string{
		`auto_ai_router_model_rpm_current{credential="claude-1",model="zz-banned"}`,
		`auto_ai_router_model_rpm_current{credential="zeta-1",model="zz-cooling"} 1`,
		`auto_ai_router_model_rpm_current{credential="zeta-1",model="other"}`,
		fmt.Sprintf("airouter_pairs_omitted %d", h.ModelsOmitted),
	} {
		if !strings.Contains(got, want+"\n") && !strings.Contains(got, want+" ") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	compareLines(t, filepath.Join(goldenDir, "metrics-mixed.golden.txt"), got)
}

// withoutRuntime is a /metrics text without the process_* and go_*
// families.
func withoutRuntime(body string) string {
	var b strings.Builder
	for l := range strings.Lines(body) {
		name := l
		if rest, ok := strings.CutPrefix(l, "# HELP "); ok {
			name = rest
		} else if rest, ok := strings.CutPrefix(l, "# TYPE "); ok {
			name = rest
		}
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			continue
		}
		b.WriteString(l)
	}
	return b.String()
}

// compareLines compares got with the golden file at path (rewritten with
// -update), naming the first line that differs.
func compareLines(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./adminapi -run %s -update)", err, t.Name())
	}
	if bytes.Equal([]byte(got), want) {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("%s differs at line %d (%d lines, want %d):\n got %q\nwant %q", path, i+1, len(g), len(w), gl, wl)
		}
	}
}

// A pair a client named "other", shown, keeps its own series: the omitted
// pairs' sum under model="other" for its credential would be a second
// series with the same labels, which the registry refused and /metrics
// leaves out as it did.
func TestMetricsOtherNamedPairKeepsItsSeries(t *testing.T) {
	r := newRigEdit(t, func(d *Deps) {
		d.Credentials = append(append([]Credential(nil), testCreds...), Credential{Name: "zeta-1", Type: "openai"})
	})
	at := r.clock.Now()
	var evs []domain.Event
	for i := range maxLogPairs + 5 {
		evs = append(evs, outcome(fmt.Sprintf("o/%d", i), "zeta-1", fmt.Sprintf("client-%04d", i), 200, at))
	}
	evs = append(evs, outcome("o/other", "zeta-1", otherModel, 200, at),
		domain.Event{V: domain.SchemaVersion, Kind: domain.KindCooldownStarted, ID: "cooldown/zeta-1/other/1", At: at,
			Cooldown: &domain.Cooldown{Credential: "zeta-1", Model: otherModel, Until: at.Add(time.Minute), Status: 503, CauseSeq: 1}})
	r.publish(evs...)
	r.mu.Lock()
	r.usage[domain.Key{Credential: "zeta-1", Model: otherModel}] = [2]int{2, 20}
	r.usage[domain.Key{Credential: "zeta-1", Model: fmt.Sprintf("client-%04d", maxLogPairs+4)}] = [2]int{5, 50}
	r.mu.Unlock()
	status, _, body := r.do("GET", "/metrics", "", "")
	if status != 200 {
		t.Fatalf("/metrics: %d", status)
	}
	var got []string
	for l := range strings.Lines(body) {
		if strings.HasPrefix(l, "auto_ai_router_model_") && strings.Contains(l, `credential="zeta-1",model="other"`) {
			got = append(got, strings.TrimSpace(l))
		}
	}
	want := []string{
		`auto_ai_router_model_rpm_current{credential="zeta-1",model="other"} 2`,
		`auto_ai_router_model_tpm_current{credential="zeta-1",model="other"} 20`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("zeta-1's other series:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(body, "\nairouter_pairs_omitted 6\n") {
		t.Error("airouter_pairs_omitted is not 6 (1,006 pairs only the log names, 1,000 shown)")
	}
}
