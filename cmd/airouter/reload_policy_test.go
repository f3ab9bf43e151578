package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// policyChanges counts the policy.changed events on r's log.
func policyChanges(t *testing.T, r *running) int {
	t.Helper()
	return countEvents(t, r, func(ev domain.Event) bool { return ev.Kind == domain.KindPolicyChanged })
}

// A reload publishes policy.changed only when the file's ban policy
// differs from the one in force: a reload of an unchanged file answers 200
// with nothing added, removed or changed and publishes nothing; one that
// changes only client keys publishes nothing; one that changes fail2ban
// names it, publishes the new policy once, and it is in force; reloading
// that file again publishes nothing more.
func TestReloadPublishesThePolicyOnlyWhenItChanges(t *testing.T) {
	a := newUpstream(t, 200)
	f := newReloadFile(t)
	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	var logs testkit.Buffer
	r := startFromFile(t, f, &logs)
	started := r.ownFingerprint()
	if n := policyChanges(t, r); n != 1 || inForce(r) != started {
		t.Fatalf("at start: %d policy changes on the log, in force %q, want 1 and %q", n, inForce(r), started)
	}

	st, ans, raw := postReload(t, r)
	if st != 200 || ans["result"] != "ok" || fmt.Sprint(ans["credentials"]) != "map[added:[] changed:[] removed:[]]" ||
		fmt.Sprint(ans["changed"]) != "[]" || fmt.Sprint(ans["needs_restart"]) != "[]" || ans["policy_fingerprint"] != started {
		t.Fatalf("a reload of the unchanged file = %d %s, want ok with nothing changed", st, raw)
	}
	if n := policyChanges(t, r); n != 1 {
		t.Errorf("a reload of the unchanged file published a policy change (%d on the log)", n)
	}

	f.write(t, map[string]string{"cred-a": a.URL}, newClientKey, "")
	if st, ans, raw := postReload(t, r); st != 200 || fmt.Sprint(ans["changed"]) != "[server.api_keys]" {
		t.Fatalf("a reload of the client keys = %d %s", st, raw)
	}
	if n := policyChanges(t, r); n != 1 {
		t.Errorf("a reload that left the policy alone published a policy change (%d on the log)", n)
	}

	f.write(t, map[string]string{"cred-a": a.URL}, newClientKey, "fail2ban:\n  max_attempts: 7\n")
	st, ans, raw = postReload(t, r)
	if st != 200 || fmt.Sprint(ans["changed"]) != "[fail2ban]" || fmt.Sprint(ans["credentials"]) != "map[added:[] changed:[] removed:[]]" {
		t.Fatalf("a reload of the policy alone = %d %s", st, raw)
	}
	seven := r.ownFingerprint()
	if seven == started || ans["policy_fingerprint"] != seven || inForce(r) != seven {
		t.Fatalf("after the policy reload: own %s (was %s), answered %v, in force %s", seven, started, ans["policy_fingerprint"], inForce(r))
	}
	if n := policyChanges(t, r); n != 2 {
		t.Errorf("the policy reload left %d policy changes on the log, want 2", n)
	}
	if p := policySection(t, r); p["in_force"] != seven || p["file_differs"] != false {
		t.Errorf("/health policy after the policy reload = %v", p)
	}
	if _, _, raw := postReload(t, r); policyChanges(t, r) != 2 {
		t.Errorf("reloading the same policy again published it again: %s", raw)
	}
	if got := reloadsMetric(t, r, "ok"); !strings.HasSuffix(got, " 4") {
		t.Errorf("reloads ok metric = %q, want 4", got)
	}
}

// A reload that removes a banned credential leaves its ban on the log and
// in force: reloading it back in, it is still banned and gets no request.
func TestReloadKeepsARemovedCredentialsBan(t *testing.T) {
	a, b := newUpstream(t, 200), newUpstream(t, 200)
	f := newReloadFile(t)
	both := map[string]string{"cred-a": a.URL, "cred-b": b.URL}
	f.write(t, both, oldClientKey, "")
	var logs testkit.Buffer
	r := startFromFile(t, f, &logs)
	if st, _, body := r.do(t, "POST", "/api/ban", testMasterKey,
		map[string]string{"credential": "cred-b", "model": "gpt-test", "ttl": "1h"}); st != 200 {
		t.Fatalf("ban cred-b = %d %s", st, body)
	}
	testkit.Eventually(t, "the ban folded", func() bool { return blocked(r, "cred-b", "gpt-test") })

	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	if st, ans, raw := postReload(t, r); st != 200 || fmt.Sprint(ans["credentials"]) != "map[added:[] changed:[] removed:[cred-b]]" {
		t.Fatalf("the reload removing cred-b = %d %s", st, raw)
	}
	if !blocked(r, "cred-b", "gpt-test") {
		t.Error("removing the credential lifted its ban")
	}
	lifted := countEvents(t, r, func(ev domain.Event) bool { return ev.Kind == domain.KindBanLifted })
	if imposed := countEvents(t, r, func(ev domain.Event) bool {
		return ev.Kind == domain.KindBanImposed && ev.Ban.Credential == "cred-b"
	}); imposed != 1 || lifted != 0 {
		t.Errorf("the log holds %d bans of cred-b and %d lifts, want 1 and 0", imposed, lifted)
	}

	f.write(t, both, oldClientKey, "")
	if st, ans, raw := postReload(t, r); st != 200 || fmt.Sprint(ans["credentials"]) != "map[added:[cred-b] changed:[] removed:[]]" {
		t.Fatalf("the reload adding cred-b back = %d %s", st, raw)
	}
	for range 4 {
		if st := chatWith(t, r, oldClientKey); st != 200 {
			t.Fatalf("a request with cred-b back = %d", st)
		}
	}
	if a.calls.Load() != 4 || b.calls.Load() != 0 {
		t.Errorf("calls: cred-a %d (want 4), banned cred-b %d (want 0)", a.calls.Load(), b.calls.Load())
	}
}

// reloadChat sends one chat completion for model with the client key.
func reloadChat(t *testing.T, r *running, model string) int {
	t.Helper()
	st, _, _ := r.do(t, "POST", "/v1/chat/completions", oldClientKey, map[string]any{
		"model": model, "messages": []map[string]string{{"role": "user", "content": "hi"}},
	})
	return st
}

// A reload changes the models, the aliases, the limits and the weights
// live: a model and an alias the file adds are served, the model's new
// rpm holds, and the new weights share the requests.
func TestReloadChangesModelsAliasesLimitsAndWeights(t *testing.T) {
	a, b := newUpstream(t, 200), newUpstream(t, 200)
	f := newReloadFile(t)
	f.write(t, map[string]string{"cred-a": a.URL, "cred-b": b.URL}, oldClientKey, "")
	var logs testkit.Buffer
	r := startFromFile(t, f, &logs)
	for _, m := range []string{"gpt-new", "fast"} {
		if st := reloadChat(t, r, m); st == 200 {
			t.Fatalf("before the reload, %s is served", m)
		}
	}
	if n := a.calls.Load() + b.calls.Load(); n != 0 {
		t.Fatalf("models not configured reached the upstreams %d times", n)
	}

	head := fmt.Sprintf("server:\n  port: %d\n  master_key: %s\n  shutdown_delay: 0s\n  api_keys: [%s]\n"+
		"events:\n  store_dir: %s\n  storage: memory\n", f.port, testMasterKey, oldClientKey, f.store)
	writeFile(t, f.path, head+fmt.Sprintf(`credentials:
  - name: cred-a
    type: openai
    api_key: sk-upstream-secret-0-abcdef
    base_url: %s/v1
    weight: 1
  - name: cred-b
    type: openai
    api_key: sk-upstream-secret-1-abcdef
    base_url: %s/v1
    weight: 3
models:
  - name: gpt-test
  - name: gpt-new
    rpm: 1
model_alias:
  fast: gpt-test
`, a.URL, b.URL))
	st, ans, raw := postReload(t, r)
	if st != 200 || fmt.Sprint(ans["credentials"]) != "map[added:[] changed:[cred-b] removed:[]]" ||
		fmt.Sprint(ans["changed"]) != "[models model_alias]" {
		t.Fatalf("reload = %d %s", st, raw)
	}
	for i := range 8 {
		if st := reloadChat(t, r, "fast"); st != 200 {
			t.Fatalf("request %d for the alias after the reload = %d", i+1, st)
		}
	}
	if a.calls.Load() != 2 || b.calls.Load() != 6 {
		t.Errorf("8 requests with weights 1 and 3: cred-a %d, cred-b %d, want 2 and 6", a.calls.Load(), b.calls.Load())
	}
	// rpm 1 per credential and model: one request on each credential, then 429.
	for i, want := range []int{200, 200, 429} {
		if st := reloadChat(t, r, "gpt-new"); st != want {
			t.Errorf("request %d for gpt-new (rpm 1 on each of 2 credentials) = %d, want %d", i+1, st, want)
		}
	}
}

// A reload whose file points the log elsewhere (events.nats_url) names it
// as needing a restart and keeps the running log: the router still
// publishes and folds on it.
func TestReloadNamesTheNATSURLAsNeedingARestart(t *testing.T) {
	a := newUpstream(t, 200)
	f := newReloadFile(t)
	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	var logs testkit.Buffer
	r := startFromFile(t, f, &logs)
	writeFile(t, f.path, fmt.Sprintf("server:\n  port: %d\n  master_key: %s\n  shutdown_delay: 0s\n  api_keys: [%s]\n"+
		"events:\n  store_dir: %s\n  nats_url: nats://127.0.0.1:1\n"+
		"credentials:\n  - name: cred-a\n    type: openai\n    api_key: sk-upstream-secret-0-abcdef\n    base_url: %s/v1\n"+
		"models:\n  - name: gpt-test\n", f.port, testMasterKey, oldClientKey, f.store, a.URL))
	st, ans, raw := postReload(t, r)
	if st != 200 || !strings.Contains(fmt.Sprint(ans["needs_restart"]), "events.nats_url") {
		t.Fatalf("reload = %d %s, want events.nats_url in needs_restart", st, raw)
	}
	if warn := logs.Lines("until a restart"); len(warn) != 1 || !strings.Contains(warn[0], "events.nats_url") {
		t.Errorf("the WARN line = %q", warn)
	}
	seq := r.live.Load().Seq()
	if st := chatWith(t, r, oldClientKey); st != 200 {
		t.Fatalf("a request after the reload = %d", st)
	}
	testkit.Eventually(t, "the outcome folded from the running log", func() bool { return r.live.Load().Seq() > seq })
}
