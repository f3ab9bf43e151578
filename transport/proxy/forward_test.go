package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/airouter/airouter/domain"
)

func TestForwardRewritesModelAndReplacesCredentials(t *testing.T) {
	up := newUpstream(t)
	c := cred("a", up)
	f := newFixture(t, []Credential{c}, []Route{{Model: "gpt-4o", Credential: "a", UpstreamModel: "gpt-4o-2024-08-06"}}, nil)

	body := `{"messages":[{"role":"user","content":"hi"}],  "model" : "gpt-4o", "temperature":0.5,"x":{"model":"keep"}}`
	resp, got := f.do(t.Context(), "/v1/chat/completions?api-version=2&x=y", body,
		"X-Forwarded-For", "10.0.0.1", "X-Forwarded-Proto", "https", "Forwarded", "for=1.2.3.4",
		"X-Real-Ip", "10.0.0.2", "Via", "1.1 lb", "Accept-Encoding", "gzip", "X-Custom", "kept",
		"OpenAI-Organization", "org-1")
	if resp.StatusCode != 200 || got != chatOK("hello") {
		t.Fatalf("status %d body %q, want the upstream's answer unchanged", resp.StatusCode, got)
	}
	calls := up.requests()
	if len(calls) != 1 {
		t.Fatalf("upstream got %d requests, want 1", len(calls))
	}
	r := calls[0]
	want := strings.Replace(body, `"gpt-4o"`, `"gpt-4o-2024-08-06"`, 1)
	if string(r.body) != want {
		t.Errorf("upstream body\n%s\nwant (only the model changed)\n%s", r.body, want)
	}
	if r.path != "/v1/chat/completions" || r.query != "api-version=2&x=y" {
		t.Errorf("upstream path %q query %q", r.path, r.query)
	}
	if a := r.header.Get("Authorization"); a != "Bearer "+c.APIKey {
		t.Errorf("upstream Authorization = %q, want the credential's key", a)
	}
	for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Proto", "Forwarded", "X-Real-Ip", "Via"} {
		if v := r.header.Get(h); v != "" {
			t.Errorf("upstream got %s: %q; proxy headers must not be forwarded", h, v)
		}
	}
	if v := r.header.Get("Accept-Encoding"); v == "gzip" {
		t.Errorf("client Accept-Encoding was forwarded")
	}
	if r.header.Get("X-Custom") != "kept" || r.header.Get("Openai-Organization") != "org-1" {
		t.Errorf("other client headers must be forwarded: %v", r.header)
	}
	if resp.Header.Get(hdrAttempts) != "1" || resp.Header.Get(hdrTrail) != "a/gpt-4o=ok" {
		t.Errorf("headers attempts=%q trail=%q", resp.Header.Get(hdrAttempts), resp.Header.Get(hdrTrail))
	}
	if resp.Header.Get(hdrDetail) != "" {
		t.Errorf("detail header without expose_detail_headers")
	}
	o := f.out.wait(t, 1)[0]
	if o.Credential != "a" || o.Model != "gpt-4o" || o.Status != 200 || o.Class != domain.ClassOK || o.Attempt != 1 || o.RequestID == "" {
		t.Errorf("outcome %+v", o)
	}
	if rpm, tpm := f.p.Usage("a", "gpt-4o"); rpm != 1 || tpm != 30 {
		t.Errorf("usage rpm=%d tpm=%d, want 1 request and the response's 30 tokens", rpm, tpm)
	}
}

func TestAliasIsResolvedBeforeRouting(t *testing.T) {
	up := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), func(d *Deps) {
		d.Aliases = map[string]string{"best": "gpt-4o"}
	})
	resp, _ := f.post("/v1/chat/completions", `{"model":"best","messages":[]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if b := string(up.requests()[0].body); b != `{"model":"gpt-4o","messages":[]}` {
		t.Errorf("upstream body %s", b)
	}
	if o := f.out.wait(t, 1)[0]; o.Model != "gpt-4o" {
		t.Errorf("outcome model %q, want the resolved id", o.Model)
	}
	if got := f.p.Models(); len(got) != 1 || got[0] != "gpt-4o" {
		t.Errorf("Models() = %v; aliases are not listed", got)
	}
}

func TestAnthropicCredentialGetsItsHeaders(t *testing.T) {
	up := newUpstream(t, step{status: 200, body: `{"type":"message","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":5,"output_tokens":7}}`})
	c := Credential{Name: "claude", Type: domain.CredentialAnthropic, BaseURL: up.url(), APIKey: "sk-ant-test-0123456789"}
	f := newFixture(t, []Credential{c}, routesFor("claude-3", "claude"), nil)
	resp, _ := f.post("/v1/messages", `{"model":"claude-3","max_tokens":10,"messages":[]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	h := up.requests()[0].header
	if h.Get("X-Api-Key") != c.APIKey || h.Get("Anthropic-Version") != "2023-06-01" || h.Get("Authorization") != "" {
		t.Errorf("anthropic headers: x-api-key=%q version=%q authorization=%q",
			h.Get("X-Api-Key"), h.Get("Anthropic-Version"), h.Get("Authorization"))
	}
	if _, tpm := f.p.Usage("claude", ""); tpm != 12 {
		t.Errorf("tpm %d, want input+output tokens 12", tpm)
	}
	// An OpenAI credential does not serve the Messages API.
	up2 := newUpstream(t)
	f2 := newFixture(t, []Credential{cred("a", up2)}, routesFor("gpt-4o", "a"), nil)
	resp, body := f2.post("/v1/messages", chatReq)
	if resp.StatusCode != 404 || up2.count() != 0 {
		t.Errorf("messages on an openai credential: status %d body %s", resp.StatusCode, body)
	}
	if !strings.Contains(body, `"type":"error"`) {
		t.Errorf("/v1/messages errors use the Anthropic shape: %s", body)
	}
}

func TestAuthAndRequestErrors(t *testing.T) {
	up := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), func(d *Deps) { d.MaxBodyBytes = 256 })
	send := func(method, path, auth, body string) (int, string) {
		req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := f.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
			} `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&env)
		return resp.StatusCode, env.Error.Type
	}
	cases := []struct {
		name, method, path, auth, body string
		status                         int
		typ                            string
	}{
		{"no key", "POST", "/v1/chat/completions", "", chatReq, 401, "authentication_error"},
		{"wrong key", "POST", "/v1/chat/completions", "Bearer nope", chatReq, 401, "authentication_error"},
		{"not bearer", "POST", "/v1/chat/completions", "Basic " + masterKey, chatReq, 401, "authentication_error"},
		{"client key", "POST", "/v1/chat/completions", "Bearer client-key-1", chatReq, 200, ""},
		{"unknown path", "POST", "/v1/nope", "Bearer " + masterKey, chatReq, 404, "not_found_error"},
		{"wrong method", "GET", "/v1/chat/completions", "Bearer " + masterKey, "", 405, "invalid_request_error"},
		{"too large", "POST", "/v1/chat/completions", "Bearer " + masterKey, `{"model":"gpt-4o","x":"` + strings.Repeat("a", 300) + `"}`, 413, "invalid_request_error"},
		{"no model", "POST", "/v1/chat/completions", "Bearer " + masterKey, `{"messages":[]}`, 400, "invalid_request_error"},
		{"model not a string", "POST", "/v1/chat/completions", "Bearer " + masterKey, `{"model":3}`, 400, "invalid_request_error"},
		{"not json", "POST", "/v1/embeddings", "Bearer " + masterKey, `model=gpt-4o`, 400, "invalid_request_error"},
		{"unserved model", "POST", "/v1/embeddings", "Bearer " + masterKey, `{"model":"nope","input":"x"}`, 404, "not_found_error"},
		{"models needs no key", "GET", "/v1/models", "", "", 200, ""},
	}
	for _, c := range cases {
		status, typ := send(c.method, c.path, c.auth, c.body)
		if status != c.status || typ != c.typ {
			t.Errorf("%s: status %d type %q, want %d %q", c.name, status, typ, c.status, c.typ)
		}
	}
	if n := up.count(); n != 1 {
		t.Errorf("upstream got %d requests, want only the client-key one", n)
	}
}

func TestModelsListsConfiguredModels(t *testing.T) {
	up := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", up)},
		append(routesFor("gpt-4o", "a"), routesFor("text-embedding-3-small", "a")...), nil)
	resp, err := f.srv.Client().Get(f.srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object string
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if list.Object != "list" || len(list.Data) != 2 || list.Data[0].ID != "gpt-4o" || list.Data[1].ID != "text-embedding-3-small" {
		t.Errorf("models %+v", list)
	}
}

func TestNewReportsEveryProblem(t *testing.T) {
	_, err := New(Deps{
		Credentials: []Credential{
			{Name: "a", Type: "vertex", BaseURL: "ftp://x", APIKey: "sk-secret-value-123456"},
			{Name: "a", Type: domain.CredentialOpenAI, BaseURL: "http://h"},
		},
		Routes: []Route{{Model: "m", Credential: "nope"}},
	})
	if err == nil {
		t.Fatal("New accepted bad deps")
	}
	msg := err.Error()
	for _, want := range []string{"master key is required", `type "vertex"`, `"ftp://x"`, "names another credential too", `unknown credential "nope"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if strings.Contains(msg, "sk-secret") {
		t.Errorf("error leaks a key: %q", msg)
	}
}

// A keyless proxy credential passes a client key on to the router behind
// it, but never the master key.
func TestKeylessProxyForwardsClientKeysButNeverTheMasterKey(t *testing.T) {
	up := newUpstream(t)
	c := Credential{Name: "relay", Type: domain.CredentialProxy, BaseURL: up.url()}
	f := newFixture(t, []Credential{c}, routesFor("gpt-4o", "relay"), nil)

	if resp, body := f.post("/v1/chat/completions", chatReq); resp.StatusCode != 200 {
		t.Fatalf("master key: %d %s", resp.StatusCode, body)
	}
	if resp, body := f.post("/v1/chat/completions", chatReq, "Authorization", "Bearer client-key-1"); resp.StatusCode != 200 {
		t.Fatalf("client key: %d %s", resp.StatusCode, body)
	}
	reqs := up.requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream saw %d requests", len(reqs))
	}
	if got := reqs[0].header.Get("Authorization"); got != "" {
		t.Errorf("the master key reached the relay: Authorization %q", got)
	}
	if got := reqs[1].header.Get("Authorization"); got != "Bearer client-key-1" {
		t.Errorf("the client key was not forwarded: Authorization %q", got)
	}
}
