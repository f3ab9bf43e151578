package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// A chat stream that ends before any content (the role-only first delta,
// a bare finish_reason, even the usage chunk) is an empty completion: it
// fails over before a byte reaches the client, like a 200 with no content.
func TestEmptyStreamFailsOver(t *testing.T) {
	role := sse(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
	finish := sse(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	usage := sse(`{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0,"total_tokens":3}}`)
	a := newUpstream(t, step{events: []string{role, finish, usage, "data: [DONE]\n\n"}})
	b := newUpstream(t, step{events: []string{role, chunk("ok"), "data: [DONE]\n\n"}})
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
	resp, body := f.post("/v1/chat/completions", streamReq)
	if resp.StatusCode != 200 || body != role+chunk("ok")+"data: [DONE]\n\n" {
		t.Fatalf("status %d body %q: the client must see b's whole stream, role chunk included, and none of a's", resp.StatusCode, body)
	}
	if want := "a/gpt-4o=" + string(domain.ClassEmptyCompletion) + "; b/gpt-4o=ok"; resp.Header.Get(hdrTrail) != want {
		t.Errorf("trail %q, want %q", resp.Header.Get(hdrTrail), want)
	}
	// Cut off after the role chunk, without [DONE]: empty too.
	c := newUpstream(t, step{events: []string{role}})
	d := newUpstream(t, step{events: []string{chunk("ok"), "data: [DONE]\n\n"}})
	f = newFixture(t, []Credential{cred("c", c), cred("d", d)}, routesFor("gpt-4o", "c", "d"), nil)
	resp, body = f.post("/v1/chat/completions", streamReq)
	if resp.StatusCode != 200 || body != chunk("ok")+"data: [DONE]\n\n" {
		t.Fatalf("status %d body %q after a stream that stopped after its role chunk", resp.StatusCode, body)
	}
}

// Chunks that only look empty to the check stay content: a tool call, and
// a chunk of a shape it does not know.
func TestContentlessChunks(t *testing.T) {
	for data, want := range map[string]bool{
		`{"choices":[{"delta":{"role":"assistant","content":""}}]}`:                    true,
		`{"choices":[{"delta":{},"finish_reason":"length"}]}`:                          true,
		`{"choices":[],"usage":{"total_tokens":3}}`:                                    true,
		`{"choices":[{"delta":{"content":"hi"}}]}`:                                     false,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f"}}]}}]}`: false,
		`{"choices":[{"text":"completion text"}]}`:                                     false,
		`{"error":{"message":"overloaded"}}`:                                           false,
		`{"object":"something.else"}`:                                                  false,
		`{"choices":[{"delta":{"content":null,"reasoning_content":"Let me think"}}]}`:  false,
		`{"choices":[{"delta":{"reasoning":"step 1"}}]}`:                               false,
		`{"choices":[{"delta":{"role":"assistant","reasoning_content":null}}]}`:        true,
		`[DONE]`: false,
	} {
		if got := contentless(epChat, []byte(data)); got != want {
			t.Errorf("contentless(%s) = %v, want %v", data, got, want)
		}
	}
}

// A reasoning model may send its role chunk and then think, silently, for
// longer than the time budget: the stream has started and is not cut; the
// client gets it whole once the content comes. The role chunk stops the
// budget's timer; the clock then moves well past the budget before the
// content comes.
func TestTimeBudgetStopsAtTheFirstChunkEvenWithoutContent(t *testing.T) {
	const budget = 5 * time.Second
	role := sse(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
	evs := []string{role, chunk("thought it through"), "data: [DONE]\n\n"}
	thought := make(chan struct{}) // silent thinking after the role chunk
	up := newUpstream(t, step{events: evs, gate: thought})
	f := newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), nil)
	f.set.TimeBudget = domain.Duration(budget)
	done := f.send("/v1/chat/completions", streamReq)
	f.nextTimer() // the attempt's, stopped by the headers
	testkit.Receive(t, "the role chunk to stop the budget's timer", f.nextTimer().stopped)
	f.clock.Advance(4 * budget)
	close(thought)
	resp, body := f.await(done)
	if resp.StatusCode != 200 || body != strings.Join(evs, "") {
		t.Fatalf("status %d body %q, want the whole stream", resp.StatusCode, body)
	}
}

// A stream cut off right after a content event that lacks its blank line,
// with CRLF line ends, is content, not an empty completion.
func TestCutOffStreamWithCRLFIsRelayed(t *testing.T) {
	role := "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\r\n\r\n"
	content := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\r\n"
	if !hasContentEvent([]byte(role+content), epChat) || hasContentEvent([]byte(role), epChat) {
		t.Fatal("hasContentEvent misreads CRLF events")
	}
}
