package proxy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airouter/airouter/domain"
)

// anthropicSDKDir holds the script that drives the official Anthropic
// TypeScript SDK, its package.json (the SDK's version, pinned) and its
// package-lock.json; `npm ci` there installs node_modules (CI does).
const anthropicSDKDir = "testdata/anthropic-sdk"

// sdkResult is what messages.mjs prints: what the SDK parsed.
type sdkResult struct {
	Text  string `json:"text"`
	Usage struct {
		Input     int64 `json:"input_tokens"`
		Output    int64 `json:"output_tokens"`
		CacheRead int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
	StopReason string `json:"stop_reason"`
	Events     int    `json:"events"`
}

// runAnthropicSDK runs messages.mjs in mode (plain or stream) against the
// fixture's server. Without node or the SDK installed it skips, unless
// AIROUTER_REQUIRE_NODE is set (CI sets it), where it fails.
func runAnthropicSDK(t *testing.T, f *fixture, mode string) sdkResult {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(anthropicSDKDir, "node_modules", "@anthropic-ai", "sdk", "package.json"))
	}
	if err != nil {
		if os.Getenv("AIROUTER_REQUIRE_NODE") != "" {
			t.Fatalf("node or the Anthropic SDK is missing and AIROUTER_REQUIRE_NODE is set (run npm ci in %s): %v", anthropicSDKDir, err)
		}
		t.Skipf("node or the Anthropic SDK is missing (npm ci in %s; AIROUTER_REQUIRE_NODE=1 makes that a failure): %v", anthropicSDKDir, err)
	}
	cmd := exec.CommandContext(t.Context(), node, "messages.mjs", mode)
	cmd.Dir = anthropicSDKDir
	cmd.Env = append(os.Environ(), "AIROUTER_BASE_URL="+f.srv.URL, "AIROUTER_KEY="+masterKey, "AIROUTER_MODEL=claude-test")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node messages.mjs %s: %v\n%s", mode, err, stderr.String())
	}
	var res sdkResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("SDK output %q: %v", stdout.String(), err)
	}
	return res
}

func anthropicCred(name string, u *upstream) Credential {
	return Credential{Name: name, Type: domain.CredentialAnthropic, BaseURL: u.url(), APIKey: "sk-ant-test-" + name + "-0123456789"}
}

const messagesOK = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test",` +
	`"content":[{"type":"text","text":"Hello from the router"}],"stop_reason":"end_turn","stop_sequence":null,` +
	`"usage":{"input_tokens":21,"cache_read_input_tokens":4,"output_tokens":9}}`

// messagesStream is an Anthropic message stream: usage in message_start
// and message_delta.
var messagesStream = []string{
	"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"type\":\"message\"," +
		"\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null," +
		"\"usage\":{\"input_tokens\":25,\"cache_read_input_tokens\":10,\"output_tokens\":1}}}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
	"event: ping\ndata: {\"type\":\"ping\"}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello \"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"streamed\"}}\n\n",
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null}," +
		"\"usage\":{\"output_tokens\":15}}\n\n",
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
}

// TestAnthropicSDKMessages: the official Anthropic TypeScript SDK, pointed
// at the router with the master key, gets the text and usage the upstream
// sent on /v1/messages, streamed and not, and sees no failover: the first
// upstream is overloaded (529), the second answers with the credential's
// own key.
func TestAnthropicSDKMessages(t *testing.T) {
	overloaded := step{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}
	for _, tc := range []struct {
		mode   string
		answer step
		text   string
		in     int64
		out    int64
		cached int64
	}{
		{"plain", step{status: 200, body: messagesOK}, "Hello from the router", 21, 9, 4},
		{"stream", step{events: messagesStream}, "Hello streamed", 25, 15, 10},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			a := newUpstream(t, overloaded)
			b := newUpstream(t, tc.answer)
			f := newFixture(t, []Credential{anthropicCred("a", a), anthropicCred("b", b)}, routesFor("claude-test", "a", "b"), nil)
			res := runAnthropicSDK(t, f, tc.mode)
			if res.Text != tc.text || res.StopReason != "end_turn" {
				t.Errorf("SDK parsed text %q stop %q, want %q end_turn", res.Text, res.StopReason, tc.text)
			}
			if res.Usage.Input != tc.in || res.Usage.Output != tc.out || res.Usage.CacheRead != tc.cached {
				t.Errorf("SDK parsed usage %+v, want input %d output %d cache_read %d", res.Usage, tc.in, tc.out, tc.cached)
			}
			// Every event but the ping, which the SDK swallows.
			if want := len(messagesStream) - 1; tc.mode == "stream" && res.Events != want {
				t.Errorf("SDK saw %d stream events, want %d", res.Events, want)
			}
			if a.count() != 1 || b.count() != 1 {
				t.Fatalf("upstream calls a=%d b=%d, want one each", a.count(), b.count())
			}
			got := b.requests()[0]
			if got.path != "/v1/messages" || got.header.Get("X-Api-Key") != "sk-ant-test-b-0123456789" ||
				got.header.Get("Anthropic-Version") == "" {
				t.Errorf("upstream got %s x-api-key %q anthropic-version %q", got.path,
					got.header.Get("X-Api-Key"), got.header.Get("Anthropic-Version"))
			}
			if strings.Contains(string(got.body), masterKey) || got.header.Get("Authorization") != "" {
				t.Errorf("the master key or an Authorization header reached the upstream: %v", got.header)
			}
		})
	}
}
