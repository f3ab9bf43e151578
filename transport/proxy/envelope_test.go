package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

func envelopeFields(t *testing.T, body string) map[string]json.RawMessage {
	t.Helper()
	var env map[string]map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		t.Fatalf("not an error envelope: %q: %v", body, err)
	}
	e, ok := env["error"]
	if !ok {
		t.Fatalf("no \"error\" object in %q", body)
	}
	return e
}

// checkEnvelope asserts the four OpenAI fields: message and type non-empty
// strings, param and code a string or null.
func checkEnvelope(t *testing.T, name, body string) map[string]json.RawMessage {
	t.Helper()
	e := envelopeFields(t, body)
	for _, k := range []string{"message", "type"} {
		var s string
		if err := json.Unmarshal(e[k], &s); err != nil || s == "" {
			t.Errorf("%s: %q is %s, want a non-empty string (%s)", name, k, e[k], body)
		}
	}
	for _, k := range []string{"param", "code"} {
		raw, ok := e[k]
		if !ok {
			t.Errorf("%s: envelope lacks %q: %s", name, k, body)
			continue
		}
		var s *string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Errorf("%s: %q is %s, want a string or null", name, k, raw)
		}
	}
	return e
}

func TestErrorEnvelopesCarryAllFourFields(t *testing.T) {
	up := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), func(d *Deps) { d.MaxBodyBytes = 256 })
	cases := []struct {
		name, path, auth, body string
		status                 int
		typ                    string
	}{
		{"401", "/v1/chat/completions", "Bearer wrong", chatReq, 401, "authentication_error"},
		{"404 unknown path", "/v1/nope", "Bearer " + masterKey, chatReq, 404, "not_found_error"},
		{"404 unknown path without a key", "/v2/chat", "", chatReq, 404, "not_found_error"},
		{"413", "/v1/completions", "Bearer " + masterKey, `{"model":"gpt-4o","prompt":"` + strings.Repeat("a", 300) + `"}`, 413, "invalid_request_error"},
		{"400 no model", "/v1/responses", "Bearer " + masterKey, `{"input":"hi"}`, 400, "invalid_request_error"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+c.path, strings.NewReader(c.body))
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := f.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.status)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s: content type %q", c.name, ct)
		}
		e := checkEnvelope(t, c.name, string(b))
		if typ, _ := strconv.Unquote(string(e["type"])); typ != c.typ {
			t.Errorf("%s: type %s, want %q", c.name, e["type"], c.typ)
		}
	}
	if up.count() != 0 {
		t.Errorf("a rejected request reached the upstream")
	}
}

// Every way a request can be exhausted answers with a full envelope whose
// trail entries carry ms, and none of them is a 500.
func TestExhaustionEnvelopesAndNever500(t *testing.T) {
	type scenario struct {
		name    string
		setup   func(t *testing.T) *fixture
		body    string
		status  int
		typ     string
		hops    int
		firstMS int64
	}
	two := func(t *testing.T, sa, sb step, edit func(*Deps)) *fixture {
		a, b := newUpstream(t, sa), newUpstream(t, sb)
		return newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), edit)
	}
	var cur *fixture // the fixture of the running scenario, for clock moves
	advance := func(d time.Duration) func() { return func() { cur.clock.Advance(d) } }
	scenarios := []scenario{
		{name: "all rate-limited", status: 429, typ: "rate_limit_error", hops: 2, firstMS: 12, setup: func(t *testing.T) *fixture {
			return two(t, step{status: 429, body: `{}`, before: advance(12 * time.Millisecond)}, step{status: 429, body: `{}`}, nil)
		}},
		{name: "upstream 500s", status: 502, typ: "api_error", hops: 2, firstMS: 7, setup: func(t *testing.T) *fixture {
			return two(t, step{status: 500, body: `{"error":{"message":"internal"}}`, before: advance(7 * time.Millisecond)},
				step{status: 500, body: `{}`}, nil)
		}},
		{name: "only upstream 500", status: 502, typ: "api_error", hops: 1, firstMS: 3, setup: func(t *testing.T) *fixture {
			up := newUpstream(t, step{status: 500, body: `{}`, before: advance(3 * time.Millisecond)})
			return newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), nil)
		}},
		{name: "connections refused", status: 502, typ: "api_error", hops: 2, setup: func(t *testing.T) *fixture {
			a, b := newUpstream(t), newUpstream(t)
			a.srv.Close()
			b.srv.Close()
			return newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
		}},
		{name: "empty completions", status: 502, typ: "api_error", hops: 2, setup: func(t *testing.T) *fixture {
			return two(t, step{status: 200, body: chatEmpty}, step{status: 200, body: chatEmpty}, nil)
		}},
		{name: "request timeouts", status: 502, typ: "api_error", hops: 2, setup: func(t *testing.T) *fixture {
			return two(t, step{hang: true}, step{hang: true}, func(d *Deps) {
				d.RequestTimeout = 30 * time.Millisecond
				d.Clock = nil // request_timeout cuts a real connection on the real clock
			})
		}},
		{name: "time budget", status: 504, typ: "timeout_error", hops: 1, firstMS: 10000, setup: func(t *testing.T) *fixture {
			// a hangs while the clock passes the budget, whose timer cuts it.
			f := two(t, step{hang: true, before: advance(10 * time.Second)}, step{}, nil)
			f.set.TimeBudget = domain.Duration(5 * time.Second)
			return f
		}},
		{name: "all blocked", status: 429, typ: "rate_limit_error", hops: 0, setup: func(t *testing.T) *fixture {
			f := two(t, step{}, step{}, nil)
			f.gate[domain.Key{Credential: "a", Model: "*"}] = domain.Block{Reason: domain.BlockBanned, Permanent: true}
			f.gate[domain.Key{Credential: "b", Model: "gpt-4o"}] = domain.Block{Reason: domain.BlockCoolingDown, Until: f.clock.Now().Add(time.Minute)}
			return f
		}},
		{name: "unknown model", body: `{"model":"gpt-9"}`, status: 404, typ: "not_found_error", hops: 0, setup: func(t *testing.T) *fixture {
			return two(t, step{}, step{}, nil)
		}},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			cur = s.setup(t)
			body := s.body
			if body == "" {
				body = chatReq
			}
			resp, got := cur.bounded("/v1/chat/completions", body)
			if resp.StatusCode == 500 {
				t.Fatalf("answered 500: %s", got)
			}
			if resp.StatusCode != s.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, s.status, got)
			}
			e := checkEnvelope(t, s.name, got)
			if typ, _ := strconv.Unquote(string(e["type"])); typ != s.typ {
				t.Errorf("type %s, want %q", e["type"], s.typ)
			}
			if resp.Header.Get(hdrAttempts) != strconv.Itoa(s.hops) {
				t.Errorf("attempts %q, want %d", resp.Header.Get(hdrAttempts), s.hops)
			}
			var trail []map[string]json.RawMessage
			if raw, ok := e["trail"]; ok {
				if err := json.Unmarshal(raw, &trail); err != nil {
					t.Fatalf("trail %s: %v", raw, err)
				}
			}
			if len(trail) != s.hops {
				t.Fatalf("trail has %d entries, want %d: %s", len(trail), s.hops, got)
			}
			for i, entry := range trail {
				for _, k := range []string{"credential", "model", "class", "ms"} {
					if _, ok := entry[k]; !ok {
						t.Errorf("trail entry %d lacks %q: %s", i, k, got)
					}
				}
				var ms int64
				if err := json.Unmarshal(entry["ms"], &ms); err != nil || ms < 0 {
					t.Errorf("trail entry %d ms %s, want a non-negative integer", i, entry["ms"])
				}
				if i == 0 && s.firstMS > 0 && ms != s.firstMS {
					t.Errorf("first trail entry ms %d, want the hop's %d ms", ms, s.firstMS)
				}
			}
		})
	}
}

// The recorded outcomes carry each hop's latency and count the hops 1, 2,
// 3 under one request id.
