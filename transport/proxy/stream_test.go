package proxy

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/airouter/airouter/domain"
)

const streamReq = `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`

const usageChunk = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":5,\"total_tokens\":9}}\n\n"

// openStream posts a streamed request and returns the open response.
func (f *fixture) openStream(t *testing.T, req *http.Request) *http.Response {
	t.Helper()
	req.Header.Set("Authorization", "Bearer "+masterKey)
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readEvent reads one SSE event (up to its blank line).
func readEvent(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	for {
		line, err := r.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			t.Fatalf("reading an event: %v (got %q)", err, b.String())
		}
		if line == "\n" {
			return b.String()
		}
	}
}

func TestStreamRelaysEachChunkAsItComes(t *testing.T) {
	release := make(chan struct{})
	up := newUpstream(t, step{events: []string{chunk("Hel"), chunk("lo"), usageChunk, "data: [DONE]\n\n"}, gate: release})
	f := newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), nil)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, f.srv.URL+"/v1/chat/completions", strings.NewReader(streamReq))
	resp := f.openStream(t, req)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp.Header.Get(hdrAttempts) != "1" || resp.Header.Get(hdrTrail) != "a/gpt-4o=ok" {
		t.Errorf("attempts %q trail %q", resp.Header.Get(hdrAttempts), resp.Header.Get(hdrTrail))
	}
	r := bufio.NewReader(resp.Body)
	// The upstream is still holding the rest back: this first event can
	// only arrive if the proxy flushed it.
	if ev := readEvent(t, r); ev != chunk("Hel") {
		t.Fatalf("first event %q", ev)
	}
	close(release)
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(rest) != chunk("lo")+usageChunk+"data: [DONE]\n\n" {
		t.Errorf("rest of the stream %q", rest)
	}
	o := f.out.wait(t, 1)[0]
	if o.Class != domain.ClassOK || o.Status != 200 {
		t.Errorf("outcome %+v", o)
	}
	if body := string(up.requests()[0].body); !strings.Contains(body, `"stream_options":{"include_usage":true}`) {
		t.Errorf("upstream body %s: a stream must ask for usage", body)
	}
	if _, tpm := f.p.Usage("a", "gpt-4o"); tpm != 9 {
		t.Errorf("tpm %d, want the stream's 9 tokens", tpm)
	}
}

func TestStreamFailsOverBeforeItsFirstByte(t *testing.T) {
	cases := []struct {
		name  string
		first step
		class domain.Class
	}{
		{"dropped after a keep-alive comment", step{events: []string{": keep-alive\n\n"}, drop: true}, domain.ClassConnection},
		{"in-band error event", step{events: []string{sse(`{"error":{"message":"overloaded"}}`)}}, domain.ClassServerError},
		{"no events at all", step{events: []string{}}, domain.ClassEmptyCompletion},
		{"429 as JSON", step{status: 429, body: `{"error":{"message":"slow"}}`}, domain.ClassRateLimited},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newUpstream(t, c.first)
			b := newUpstream(t, step{events: []string{chunk("ok"), "data: [DONE]\n\n"}})
			f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
			resp, body := f.post("/v1/chat/completions", streamReq)
			if resp.StatusCode != 200 || body != chunk("ok")+"data: [DONE]\n\n" {
				t.Fatalf("status %d body %q: the client must see only b's stream", resp.StatusCode, body)
			}
			if want := "a/gpt-4o=" + string(c.class) + "; b/gpt-4o=ok"; resp.Header.Get(hdrTrail) != want {
				t.Errorf("trail %q, want %q", resp.Header.Get(hdrTrail), want)
			}
		})
	}
}

func TestStreamFailingMidwayEndsWithAnErrorEvent(t *testing.T) {
	a := newUpstream(t, step{events: []string{chunk("one"), chunk("two"), `data: {"partial`}, drop: true})
	b := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
	resp, body := f.post("/v1/chat/completions", streamReq)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	want := chunk("one") + chunk("two") + `data: {"partial` + "\n\n" + string(streamErrorEvent(epChat))
	if body != want {
		t.Errorf("body\n%q\nwant\n%q", body, want)
	}
	if b.count() != 0 {
		t.Errorf("a committed stream failed over")
	}
	if o := f.out.wait(t, 1)[0]; o.Class != domain.ClassConnection || o.Status != 0 {
		t.Errorf("outcome %+v, want a connection failure", o)
	}
}

func TestStreamClientDisconnectCancelsUpstream(t *testing.T) {
	a := newUpstream(t, step{events: []string{chunk("one"), chunk("two")}, gate: make(chan struct{})})
	f := newFixture(t, []Credential{cred("a", a)}, routesFor("gpt-4o", "a"), nil)
	ctx, cancel := contextWithCancel(t)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/v1/chat/completions", strings.NewReader(streamReq))
	resp := f.openStream(t, req)
	if ev := readEvent(t, bufio.NewReader(resp.Body)); ev != chunk("one") {
		t.Fatalf("first event %q", ev)
	}
	cancel()
	<-a.canceled
	if o := f.out.wait(t, 1)[0]; o.Class != domain.ClassCanceled {
		t.Errorf("outcome %+v, want canceled", o)
	}
}

func TestMessagesStreamErrorUsesAnthropicShape(t *testing.T) {
	up := newUpstream(t, step{events: []string{"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"}, drop: true})
	c := Credential{Name: "claude", Type: domain.CredentialAnthropic, BaseURL: up.url(), APIKey: "sk-ant-test-0123456789"}
	f := newFixture(t, []Credential{c}, routesFor("claude-3", "claude"), nil)
	_, body := f.post("/v1/messages", `{"model":"claude-3","stream":true,"max_tokens":5,"messages":[]}`)
	if !strings.HasSuffix(body, string(streamErrorEvent(epMessages))) {
		t.Errorf("body %q", body)
	}
	if body := string(up.requests()[0].body); strings.Contains(body, "stream_options") {
		t.Errorf("the Messages API takes no stream_options: %s", body)
	}
	f.out.wait(t, 1)
	if _, tpm := f.p.Usage("claude", "claude-3"); tpm != 4 {
		t.Errorf("tpm %d, want 4 from message_start", tpm)
	}
}
