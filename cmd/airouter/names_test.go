package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

const testClientKey = "sk-test-client-0123456789"

// anyModelRouter starts a router whose config lists no models, so its
// credentials (cred-a, cred-b) serve whatever model a client names.
func anyModelRouter(t *testing.T, ups ...*upstream) *running {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  master_key: %s\n  api_keys: [%s]\n  port: 8080\n  shutdown_delay: 0s\n", testMasterKey, testClientKey)
	fmt.Fprintf(&b, "events:\n  store_dir: %s\n  storage: memory\n", tempStore(t))
	b.WriteString("credentials:\n")
	for i, u := range ups {
		fmt.Fprintf(&b, "  - name: cred-%c\n    type: openai\n    api_key: sk-upstream-secret-%d\n    base_url: %s/v1\n", 'a'+i, i, u.URL)
	}
	cfg, err := config.Parse([]byte(b.String()), nil)
	if err != nil {
		t.Fatalf("test config: %v\n%s", err, b.String())
	}
	return start(t, cfg)
}

func chatModel(t *testing.T, r *running, path, model string) (int, []byte) {
	t.Helper()
	status, _, body := r.do(t, "POST", path, testClientKey, map[string]any{
		"model": model, "max_tokens": 8,
		"messages": []map[string]string{{"role": "user", "content": "hi"}},
	})
	return status, body
}

// A model name over domain.MaxModelNameLen is a 400 naming the limit on
// the proxy (in the endpoint's envelope) and on the admin API, and the log
// stays connected: a ban made afterwards is stored and selection skips the
// banned pair.
func TestLongModelNamesAreRefusedOnBothSurfaces(t *testing.T) {
	up, other := newUpstream(t, 200), newUpstream(t, 200)
	r := anyModelRouter(t, up, other)
	limit := strconv.Itoa(domain.MaxModelNameLen)
	for name, model := range map[string]string{
		"4 KB":              strings.Repeat("m", 4096),
		"700 Cyrillic":      strings.Repeat("я", 700),
		"60,000 chars":      strings.Repeat("x", 60000),
		"one byte too long": strings.Repeat("m", domain.MaxModelNameLen+1),
	} {
		t.Run(name, func(t *testing.T) {
			for _, path := range []string{"/v1/chat/completions", "/v1/responses", "/v1/messages"} {
				status, body := chatModel(t, r, path, model)
				var env struct {
					Type  string `json:"type"`
					Error struct {
						Type    string `json:"type"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal(body, &env); err != nil || status != 400 || !strings.Contains(env.Error.Message, limit) {
					t.Fatalf("%s: %d %.300s, want 400 naming the limit %s", path, status, body, limit)
				}
				if path == "/v1/messages" && (env.Type != "error" || env.Error.Type != "invalid_request_error") {
					t.Errorf("%s: not the Anthropic envelope: %.300s", path, body)
				}
			}
			for _, path := range []string{"/api/ban", "/api/unban"} {
				status, body := postJSON(t, r, path, map[string]string{"credential": "cred-a", "model": model})
				if status != 400 || !strings.Contains(string(body), limit) {
					t.Fatalf("%s: %d %.300s, want 400 naming the limit %s", path, status, body, limit)
				}
			}
		})
	}
	if n := up.calls.Load() + other.calls.Load(); n != 0 {
		t.Errorf("the upstreams were called %d times", n)
	}
	if status, body, h := health(t, r); status != 200 || !h.Log.Connected {
		t.Fatalf("/health after long names: %d %.500s", status, body)
	}
	banWorksAfterLongNames(t, r, up)
}

// banWorksAfterLongNames bans cred-a (upstream up) on a short model the log
// has named, and checks the ban holds: stored, folded, and skipped by
// selection.
func banWorksAfterLongNames(t *testing.T, r *running, up *upstream) {
	t.Helper()
	const model = "short-model"
	if status, body := chatModel(t, r, "/v1/chat/completions", model); status != 200 {
		t.Fatalf("chat after long names: %d %.300s", status, body)
	}
	testkit.Eventually(t, "the outcome of the short model stored", func() bool {
		return countEvents(t, r, func(ev domain.Event) bool { return ev.Outcome != nil && ev.Outcome.Model == model }) == 1
	})
	if status, body := postJSON(t, r, "/api/ban", map[string]string{"credential": "cred-a", "model": model, "ttl": "1m"}); status != 200 {
		t.Fatalf("an admin ban after long names: %d %.300s", status, body)
	}
	if !blocked(r, "cred-a", model) {
		t.Fatal("the pair is not banned after the ban answered")
	}
	before := up.calls.Load()
	for range 4 {
		if status, body := chatModel(t, r, "/v1/chat/completions", model); status != 200 {
			t.Fatalf("chat after the ban: %d %.300s", status, body)
		}
	}
	if n := up.calls.Load() - before; n != 0 {
		t.Errorf("the banned pair was selected %d times", n)
	}
}

// A name at the limit full of characters a subject token escapes goes
// through, is stored whole, and can be banned: the pair is banned and
// selection skips it.
func TestAModelNameAtTheLimitIsStoredAndBannable(t *testing.T) {
	upA, upB := newUpstream(t, 200), newUpstream(t, 200)
	r := anyModelRouter(t, upA, upB)
	model := "a b*>~." + strings.Repeat("я.", (domain.MaxModelNameLen-7)/3)
	model += strings.Repeat("~", domain.MaxModelNameLen-len(model))
	if len(model) != domain.MaxModelNameLen {
		t.Fatalf("test model is %d bytes", len(model))
	}
	for range 2 {
		if status, body := chatModel(t, r, "/v1/chat/completions", model); status != 200 {
			t.Fatalf("chat: %d %.300s", status, body)
		}
	}
	testkit.Eventually(t, "the outcomes stored with the full name", func() bool {
		return countEvents(t, r, func(ev domain.Event) bool { return ev.Outcome != nil && ev.Outcome.Model == model }) == 2
	})
	status, body := postJSON(t, r, "/api/ban", map[string]string{"credential": "cred-a", "model": model})
	if status != 200 {
		t.Fatalf("ban: %d %.300s", status, body)
	}
	if !blocked(r, "cred-a", model) {
		t.Fatal("the pair is not banned after the ban answered")
	}
	if n := countEvents(t, r, func(ev domain.Event) bool { return ev.Ban != nil && ev.Ban.Model == model }); n != 1 {
		t.Fatalf("%d ban events with the full name, want 1", n)
	}
	before := upA.calls.Load()
	for range 4 {
		if status, body := chatModel(t, r, "/v1/chat/completions", model); status != 200 {
			t.Fatalf("chat after the ban: %d %.300s", status, body)
		}
	}
	if n := upA.calls.Load() - before; n != 0 {
		t.Errorf("the banned pair was selected %d times", n)
	}
	if status, body, h := health(t, r); status != 200 || !h.Log.Connected {
		t.Fatalf("/health: %d %.500s", status, body)
	}
}
