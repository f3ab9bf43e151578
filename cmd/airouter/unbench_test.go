package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// POST /api/unbench lifts a bench as an event in the log: the model is
// routed again as soon as the API answers, the answer names the bench it
// lifted, and a model not benched is 404.
func TestUnbenchLiftsABenchAsAnEvent(t *testing.T) {
	up := newUpstream(t, 200)
	r := start(t, testConfig(t, tempStore(t), "file", "", up, newUpstream(t, 200)))
	now := time.Now().UTC()
	until := now.Add(10 * time.Minute)
	seq, err := r.log.PublishControl(t.Context(), domain.Event{V: domain.SchemaVersion, Kind: domain.KindModelBenched,
		ID: "bench/gpt-test/test", At: now, Bench: &domain.Bench{Model: "gpt-test", Until: until, Failures: 3,
			Credentials: []string{"cred-a", "cred-b"}, Reason: "3 failures on 2 credentials within 15m (last: 502)"}})
	if err == nil {
		err = r.live.WaitFor(t.Context(), seq)
	}
	if err != nil {
		t.Fatal(err)
	}
	if status, _, body := chat(t, r); status != http.StatusTooManyRequests {
		t.Fatalf("benched model: %d %s, want 429 (no candidate usable now)", status, body)
	}

	status, body := postJSON(t, r, "/api/unbench", map[string]string{"model": "gpt-test"})
	if status != http.StatusOK || !strings.Contains(string(body), `"model":"gpt-test"`) ||
		!strings.Contains(string(body), `"until":"`+until.Format(time.RFC3339Nano)+`"`) ||
		!strings.Contains(string(body), `"failures":3`) {
		t.Fatalf("unbench: %d %s", status, body)
	}
	if status, _, body := chat(t, r); status != http.StatusOK {
		t.Fatalf("right after the unbench: %d %s, want 200", status, body)
	}
	n := countEvents(t, r, func(ev domain.Event) bool {
		return ev.Kind == domain.KindModelUnbenched && ev.Unbench.Model == "gpt-test" && ev.Unbench.By == domain.LiftedByAdmin
	})
	if n != 1 {
		t.Fatalf("%d model.unbenched events in the log, want 1", n)
	}
	if _, _, metrics := r.do(t, "GET", "/metrics", testMasterKey, nil); !strings.Contains(string(metrics),
		`airouter_model_unbench_events_total{model="gpt-test"} 1`) {
		t.Fatalf("no unbench in /metrics:\n%s", grepLines(string(metrics), "unbench"))
	}
	if status, body := postJSON(t, r, "/api/unbench", map[string]string{"model": "gpt-test"}); status != http.StatusNotFound ||
		!strings.Contains(string(body), "not benched") {
		t.Fatalf("unbench of a model not benched: %d %s, want 404", status, body)
	}
}

// Bad input to /api/unbench is 400 naming the field; without the master
// key it is refused.
func TestUnbenchBadInput(t *testing.T) {
	r := start(t, testConfig(t, tempStore(t), "file", "", newUpstream(t, 200)))
	for _, tc := range []struct {
		name string
		body any
		want string
	}{
		{"no model", map[string]string{}, "model is required"},
		{"blank model", map[string]string{"model": "  "}, "model is required"},
		{"unknown field", map[string]any{"model": "gpt-test", "credential": "cred-a"}, `unknown field \"credential\"`},
		{"model not a string", map[string]any{"model": 7}, "model"},
		{"model too long", map[string]string{"model": strings.Repeat("m", 300)}, "model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := postJSON(t, r, "/api/unbench", tc.body)
			if status != http.StatusBadRequest || !strings.Contains(string(body), tc.want) {
				t.Fatalf("%d %s, want 400 naming %q", status, body, tc.want)
			}
		})
	}
	if status, _, _ := r.do(t, "POST", "/api/unbench", "", map[string]string{"model": "gpt-test"}); status != http.StatusUnauthorized {
		t.Fatalf("without the master key: %d, want 401", status)
	}
}
