package adminapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// findLines returns the log lines with message msg.
func findLines(lines []logLine, msg string) []logLine {
	var out []logLine
	for _, l := range lines {
		if l["@message"] == msg {
			out = append(out, l)
		}
	}
	return out
}

func wantFields(t *testing.T, l logLine, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if l[k] != v {
			t.Errorf("%s: %s = %#v, want %#v (line %v)", l["@message"], k, l[k], v, l)
		}
	}
}

func TestBanLogLines(t *testing.T) {
	r := newRig(t)
	r.failures("openai-1", "gpt-4o", 429, 3, 5*time.Minute)
	r.admin("POST", "/api/ban", `{"credential":"openai-2","ttl":"30m","reason":"air-scaler drain"}`, 200)
	r.admin("POST", "/api/ban", `{"credential":"claude-1","model":"claude-sonnet"}`, 200)
	r.admin("POST", "/api/unban", `{"credential":"openai-2"}`, 200)
	r.admin("POST", "/api/unban", `{"credential":"claude-1","model":"claude-sonnet"}`, 200)
	r.clock.Advance(6 * time.Minute)
	r.publish(r.live.Load().ExpiredBans(r.clock.Now())...)

	lines := r.logs.lines(t)
	auto := findLines(lines, "Credential banned by fail2ban")
	if len(auto) != 1 {
		t.Fatalf("%d automatic ban lines, want 1", len(auto))
	}
	wantFields(t, auto[0], map[string]any{
		"@level": "error", "@module": "admin", "credential": "openai-1", "model": "gpt-4o",
		"error_code": float64(429), "failures": float64(3), "rule": "3 x 429 (rule 429: max_attempts 3, ban 5m)",
		"ban_duration": "5m0s", "permanent": false, "until": "2026-09-21T17:04:00Z",
	})
	manual := findLines(lines, "Credential banned by admin")
	if len(manual) != 2 {
		t.Fatalf("%d manual ban lines, want 2", len(manual))
	}
	wantFields(t, manual[0], map[string]any{
		"@level": "warn", "credential": "openai-2", "model": "*", "error_code": float64(0),
		"reason": "admin: air-scaler drain", "ban_duration": "30m0s", "permanent": false,
	})
	wantFields(t, manual[1], map[string]any{
		"@level": "warn", "credential": "claude-1", "model": "claude-sonnet", "error_code": float64(0),
		"ban_duration": "permanent", "permanent": true,
	})
	unbans := findLines(lines, "Credential unbanned manually")
	if len(unbans) != 2 {
		t.Fatalf("%d manual unban lines, want 2", len(unbans))
	}
	wantFields(t, unbans[0], map[string]any{"@level": "info", "credential": "openai-2", "removed": float64(1)})
	wantFields(t, unbans[1], map[string]any{"@level": "info", "credential": "claude-1", "model": "claude-sonnet", "removed": float64(1)})
	expired := findLines(lines, "Credential unbanned (ban expired)")
	if len(expired) != 1 {
		t.Fatalf("%d expiry lines, want 1", len(expired))
	}
	wantFields(t, expired[0], map[string]any{"@level": "info", "credential": "openai-1", "model": "gpt-4o"})

	for _, s := range []string{masterKey, clientKey} {
		if strings.Contains(r.logs.String(), s) {
			t.Error("a key reached the log")
		}
	}
}

// TestReplayDoesNotRelogHistory starts a second replica on the same log:
// the events it replays at start produce no log lines and no counts, yet
// an unban that comes later is counted against the bans it replayed.
func TestReplayDoesNotRelogHistory(t *testing.T) {
	r := newRig(t)
	r.failures("openai-1", "gpt-4o", 429, 3, time.Hour)
	r.admin("POST", "/api/ban", `{"credential":"openai-1","ttl":"30m"}`, 200)
	r.admin("PUT", "/api/fallback", `{"max_hops":4}`, 200)
	bootSeq := r.live.Load().Seq()

	logs := &logBuffer{}
	live := projections.NewLive(nil)
	api, err := New(Deps{
		MasterKey: masterKey, Credentials: testCreds, Snapshot: live.Load, WaitFor: live.WaitFor,
		Publish: r.log.PublishControl, Clock: r.clock.Now,
		Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug, JSONFormat: true}),
	})
	if err != nil {
		t.Fatal(err)
	}
	live.AfterApply = func(_ *projections.State, ev domain.Event, ch projections.Change) {
		api.Observe(ev, ch, ev.Seq > bootSeq)
	}
	stop, err := r.log.Consume(r.ctx, 0, live.Apply)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := live.WaitFor(r.ctx, bootSeq); err != nil {
		t.Fatal(err)
	}
	if got := logs.String(); got != "" {
		t.Errorf("replay logged:\n%s", got)
	}
	if api.Settings().MaxHops != 4 {
		t.Errorf("the replica does not see the replayed settings: %+v", api.Settings())
	}

	r.admin("POST", "/api/unban", `{"credential":"openai-1"}`, 200)
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	if err := live.WaitFor(ctx, r.live.Load().Seq()); err != nil {
		t.Fatal(err)
	}
	unbans := findLines(logs.lines(t), "Credential unbanned manually")
	if len(unbans) != 1 || unbans[0]["removed"] != float64(2) {
		t.Errorf("the second replica's unban line: %v", unbans)
	}
}
