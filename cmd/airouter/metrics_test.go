package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/internal/testkit"
)

// The usage the fake upstreams report; the token counters must add up to
// exactly these.
const (
	chatUsage = `{"prompt_tokens":12,"completion_tokens":30,"total_tokens":42,` +
		`"prompt_tokens_details":{"cached_tokens":8},"completion_tokens_details":{"reasoning_tokens":20}}`
	chatStreamUsage = `{"prompt_tokens":4,"completion_tokens":5,"total_tokens":9,` +
		`"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}}`
	messagesUsage      = `{"input_tokens":20,"cache_read_input_tokens":5,"output_tokens":7}`
	messagesStartUsage = `{"input_tokens":25,"cache_read_input_tokens":10,"output_tokens":1}`
	messagesDeltaUsage = `{"output_tokens":15}`
	// bigAnswer is larger than loopback socket buffers hold, so a client
	// that leaves after the headers makes the router's write fail.
	bigAnswer = 16 << 20
)

// trafficUpstream answers by the requested model: gpt-test with a
// completion (streamed or not) and usage, gpt-slow with one streamed chunk
// and then nothing until the router hangs up, gpt-big with a body larger
// than socket buffers, gpt-fail with 500, gpt-cool with 429 and
// Retry-After, claude-test in Anthropic's shapes.
func trafficUpstream(t *testing.T) *upstream {
	t.Helper()
	release := make(chan struct{})
	u := &upstream{Server: httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}{}
		_ = json.NewDecoder(r.Body).Decode(&u)
		switch u.Model {
		case "gpt-fail":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"error":{"message":"boom","type":"server_error"}}`)
		case "gpt-cool":
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit_error"}}`)
		case "gpt-big":
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"%s"}}]}`,
				strings.Repeat("x", bigAnswer))
		case "gpt-slow":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, chatChunk("Hel"))
			http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
			case <-release:
			}
		case "claude-test":
			writeMessages(w, u.Stream)
		default:
			writeChat(w, u.Stream)
		}
	}))}
	t.Cleanup(u.Close)
	t.Cleanup(func() { close(release) }) // runs before Close
	return u
}

func chatChunk(content string) string {
	return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + content + `"}}]}` + "\n\n"
}

func writeChat(w http.ResponseWriter, stream bool) {
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":`+chatUsage+`}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = io.WriteString(w, chatChunk("Hel")+chatChunk("lo")+
		`data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":`+chatStreamUsage+"}\n\ndata: [DONE]\n\n")
}

func writeMessages(w http.ResponseWriter, stream bool) {
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test",`+
			`"content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn","usage":`+messagesUsage+`}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(name, data string) { _, _ = io.WriteString(w, "event: "+name+"\ndata: "+data+"\n\n") }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant",`+
		`"model":"claude-test","content":[],"usage":`+messagesStartUsage+`}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello"}}`)
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":`+messagesDeltaUsage+`}`)
	ev("message_stop", `{"type":"message_stop"}`)
}

// trafficConfig binds each test model to one credential on u.
func trafficConfig(t *testing.T, u *upstream) *config.Config {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  master_key: %s\n  port: 8080\n  shutdown_delay: 0s\n", testMasterKey)
	fmt.Fprintf(&b, "events:\n  store_dir: %s\n  storage: memory\n", tempStore(t))
	b.WriteString("credentials:\n")
	for _, c := range []struct{ name, typ string }{
		{"cred-openai", "openai"}, {"cred-claude", "anthropic"}, {"cred-fail", "openai"}, {"cred-cool", "openai"},
	} {
		fmt.Fprintf(&b, "  - name: %s\n    type: %s\n    api_key: sk-upstream-%s\n    base_url: %s/v1\n", c.name, c.typ, c.name, u.URL)
	}
	b.WriteString("models:\n")
	for model, cred := range map[string]string{"gpt-test": "cred-openai", "gpt-slow": "cred-openai", "gpt-big": "cred-openai",
		"claude-test": "cred-claude", "gpt-fail": "cred-fail", "gpt-cool": "cred-cool"} {
		fmt.Fprintf(&b, "  - name: %s\n    credential: %s\n", model, cred)
	}
	cfg, err := config.Parse([]byte(b.String()), nil)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, b.String())
	}
	return cfg
}

// servedTraffic starts a router and sends it what the metrics describe: a
// completion and a streamed one with usage, Anthropic messages both ways,
// a 500, a 429 with Retry-After (a cooldown), a client that leaves a
// stream and one that leaves a large answer, requests selection rejects,
// an admin ban and unban. It returns the router and its /metrics.
func servedTraffic(t *testing.T) (*running, string) {
	t.Helper()
	r := start(t, trafficConfig(t, trafficUpstream(t)))
	send := func(path, model string, stream bool, want int) {
		t.Helper()
		body := map[string]any{"model": model, "max_tokens": 16, "stream": stream,
			"messages": []map[string]string{{"role": "user", "content": "hi"}}}
		if status, _, out := r.do(t, "POST", path, testMasterKey, body); status != want {
			t.Fatalf("%s %s stream=%v: %d %s, want %d", path, model, stream, status, out, want)
		}
	}
	send("/v1/chat/completions", "gpt-test", false, 200)
	send("/v1/chat/completions", "gpt-test", true, 200)
	send("/v1/messages", "claude-test", false, 200)
	send("/v1/messages", "claude-test", true, 200)
	send("/v1/chat/completions", "gpt-fail", false, 502)
	send("/v1/chat/completions", "gpt-cool", false, 429)
	leave(t, r, "gpt-slow", true)
	leave(t, r, "gpt-big", false)
	for _, p := range []string{"/api/ban", "/api/unban"} {
		if status, _, out := r.do(t, "POST", p, testMasterKey, map[string]any{"credential": "cred-fail", "model": "gpt-fail"}); status != 200 {
			t.Fatalf("%s: %d %s", p, status, out)
		}
	}
	var metrics string
	testkit.Eventually(t, "the cooldown and both aborted answers in /metrics", func() bool {
		_, _, b := r.do(t, "GET", "/metrics", "", nil)
		metrics = string(b)
		return strings.Contains(metrics, "airouter_cooldown_events_total{") &&
			sample(metrics, `auto_ai_router_aborted_requests_total{credential="cred-openai",endpoint="/v1/chat/completions",model="gpt-big"}`) == 1 &&
			sample(metrics, `auto_ai_router_aborted_requests_total{credential="cred-openai",endpoint="/v1/chat/completions",model="gpt-slow"}`) == 1
	})
	// Selection now skips the cooling pair.
	send("/v1/chat/completions", "gpt-cool", false, 429)
	_, _, b := r.do(t, "GET", "/metrics", "", nil)
	return r, string(b)
}

// leave sends a request and goes away once the answer has started: after
// the first streamed chunk, or after the headers of a whole body.
func leave(t *testing.T, r *running, model string, stream bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	body := fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, model, stream)
	req, _ := http.NewRequestWithContext(ctx, "POST", r.url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testMasterKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", model, err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("%s: status %d", model, resp.StatusCode)
	}
	if stream {
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.Contains(line, "Hel") {
			t.Fatalf("%s: first line %q, %v", model, line, err)
		}
	}
	cancel()
	_ = resp.Body.Close()
}

// sample is the value of the series written exactly as series (labels in
// the exposition's sorted order), or -1 when /metrics has no such line.
func sample(metrics, series string) float64 {
	for line := range strings.SplitSeq(metrics, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return -1
			}
			return f
		}
	}
	return -1
}

// TestMetricsAfterTraffic: after real traffic the router's /metrics has
// the token counters with exactly the usage the upstreams reported
// (OpenAI and Anthropic shapes, streamed and not), the aborted answers,
// the credential errors, the process and Go runtime collectors; promtool
// finds nothing to lint; and the Grafana dashboard queries only metrics
// it exports.
func TestMetricsAfterTraffic(t *testing.T) {
	_, metrics := servedTraffic(t)
	t.Run("values", func(t *testing.T) {
		want := map[string]float64{
			`auto_ai_router_input_tokens_total{credential="cred-openai",model="gpt-test"}`:     12 + 4,
			`auto_ai_router_output_tokens_total{credential="cred-openai",model="gpt-test"}`:    30 + 5,
			`auto_ai_router_reasoning_tokens_total{credential="cred-openai",model="gpt-test"}`: 20 + 1,
			`auto_ai_router_cached_tokens_total{credential="cred-openai",model="gpt-test"}`:    8 + 2,
			`auto_ai_router_input_tokens_total{credential="cred-claude",model="claude-test"}`:  20 + 25,
			`auto_ai_router_output_tokens_total{credential="cred-claude",model="claude-test"}`: 7 + 15,
			`auto_ai_router_cached_tokens_total{credential="cred-claude",model="claude-test"}`: 5 + 10,
			// Anthropic reports no reasoning tokens: no series.
			`auto_ai_router_reasoning_tokens_total{credential="cred-claude",model="claude-test"}`: -1,
			// The client left before any usage arrived.
			`auto_ai_router_input_tokens_total{credential="cred-openai",model="gpt-slow"}`: -1,
			`auto_ai_router_credential_errors_total{credential="cred-fail"}`:               1,
			`auto_ai_router_credential_errors_total{credential="cred-cool"}`:               1,
			`auto_ai_router_credential_errors_total{credential="cred-openai"}`:             -1,
			`airouter_ban_events_total{origin="admin"}`:                                    1,
			`airouter_unban_events_total{by="admin"}`:                                      1,
		}
		for series, v := range want {
			if got := sample(metrics, series); got != v {
				t.Errorf("%s = %v, want %v", series, got, v)
			}
		}
		for _, name := range []string{"process_cpu_seconds_total", "process_resident_memory_bytes", "go_goroutines", "go_memstats_heap_inuse_bytes"} {
			if sample(metrics, name) < 0 {
				t.Errorf("/metrics has no %s", name)
			}
		}
	})
	t.Run("promtool", func(t *testing.T) { lintWithPromtool(t, metrics) })
	t.Run("dashboard", func(t *testing.T) { checkDashboard(t, metrics, "../../deploy/grafana/airouter.json") })
}

// lintWithPromtool pipes a scrape to `promtool check metrics`. Without
// promtool the test skips, unless AIROUTER_REQUIRE_PROMTOOL is set (CI
// sets it), where it fails.
func lintWithPromtool(t *testing.T, metrics string) {
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("AIROUTER_REQUIRE_PROMTOOL") != "" {
			t.Fatal("promtool is not installed and AIROUTER_REQUIRE_PROMTOOL is set (apt-get install prometheus)")
		}
		t.Skip("promtool is not installed; set AIROUTER_REQUIRE_PROMTOOL=1 to make that a failure")
	}
	cmd := exec.CommandContext(t.Context(), bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(metrics)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out.String())
	}
}
