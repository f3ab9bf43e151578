package proxy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseBody(t *testing.T) {
	cases := []struct {
		body   string
		model  string
		stream bool
		err    error
	}{
		{`{"model":"gpt-4o"}`, "gpt-4o", false, nil},
		{` { "stream" : true , "model" : "a\"b" , "messages":[{"model":"inner"}] } `, `a"b`, true, nil},
		{`{"messages":[{"model":"inner"}],"model":"outer","stream":false}`, "outer", false, nil},
		{`{"model":"m","mod\u0065l":"gpt-4o","str\u0065am":true}`, "gpt-4o", true, nil},
		{`{"mod\u00":"gpt-4o"}`, "", false, errNotJSON},
		{`{"model":""}`, "", false, errNoModel},
		{`{"model":null}`, "", false, errNoModel},
		{`{"messages":[]}`, "", false, errNoModel},
		{`[]`, "", false, errNotJSON},
		{`{"model":"x"`, "", false, errNotJSON},
		{`{"model" "x"}`, "", false, errNotJSON},
		{``, "", false, errNotJSON},
		{`{"model":"gpt-4o"} trailing`, "", false, errNotJSON},
		{`{"model":"gpt-4o"}{}`, "", false, errNotJSON},
		{`{"model":"gpt-4o","stop":[tru]}`, "", false, errNotJSON},
		{`{"model":"gpt-4o","n":01}`, "", false, errNotJSON},
		{`{"model":"gpt-4o","x":{"a" 1}}`, "", false, errNotJSON},
		{`{"model":"gpt-4o","x":"\q"}`, "", false, errNotJSON},
		{"{\"model\":\"gpt-4o\",\"x\":\"a\tb\"}", "", false, errNotJSON},
		{`{"model":"gpt-4o","x":[1,]}`, "", false, errNotJSON},
		{"{\"model\":\"gpt-4o\"}\n\t ", "gpt-4o", false, nil},
		{`{"model":"gpt-4o","x":[-0.5e+3,true,false,null,"\u00e9\/"]}`, "gpt-4o", false, nil},
	}
	for _, c := range cases {
		cb, err := parseBody([]byte(c.body))
		if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) || cb.model != c.model || cb.stream != c.stream {
			t.Errorf("%s: model %q stream %v err %v, want %q %v %v", c.body, cb.model, cb.stream, err, c.model, c.stream, c.err)
		}
	}
}

// A body encoding/json refuses is a 400 whose message names the problem
// and where it is, in the OpenAI error shape; the upstream sees nothing.
func TestInvalidJSONBodiesAreRefusedNamingTheProblem(t *testing.T) {
	hr := newHandlerRig(t)
	cases := map[string]string{
		`{"model":"gpt-4o","messages":[]} trailing`: "invalid character 't' after top-level value (at byte 34)",
		`{"model":"gpt-4o","stop":["a",tru]}`:       "invalid character ']' in literal true (expecting 'e') (at byte 34)",
		`{"model":"gpt-4o","n":01}`:                 "invalid character '1' after object key:value pair (at byte 24)",
		"{\"model\":\"gpt-4o\",\"x\":\"a\u0001\"}":  "invalid character '\\x01' in string literal (at byte 25)",
	}
	for body, want := range cases {
		rec, sent := hr.post("/v1/chat/completions", []byte(body))
		var e struct {
			Error struct{ Message, Type string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
			t.Fatalf("%q: answer %d %q is not the error shape: %v", body, rec.Code, rec.Body, err)
		}
		if rec.Code != 400 || e.Error.Type != "invalid_request_error" || sent != nil ||
			e.Error.Message != "request body must be a JSON object: "+want {
			t.Errorf("%q: %d %+v, upstream got %q; want 400 invalid_request_error naming %q", body, rec.Code, e.Error, sent, want)
		}
	}
}

// Nesting is refused past encoding/json's limit and accepted up to it.
func TestScannerDepthIsEncodingJSONs(t *testing.T) {
	for _, depth := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		b := []byte(`{"model":"gpt-4o","a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + "}")
		_, err := parseBody(b)
		if valid := json.Valid(b); (err == nil) != valid {
			t.Errorf("depth %d: parseBody err %v, encoding/json valid %v", depth, err, valid)
		}
	}
}

func TestWithModelKeepsEveryOtherByte(t *testing.T) {
	body := `{"a":1, "model" :"gpt-4o","nested":{"model":"gpt-4o"},"z":"é"}`
	cb, err := parseBody([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	send, _ := json.Marshal("provider/gpt-4o")
	want := `{"a":1, "model" :"provider/gpt-4o","nested":{"model":"gpt-4o"},"z":"é"}`
	if got := string(cb.withModel(send)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	same, _ := json.Marshal("gpt-4o")
	if got := cb.withModel(same); &got[0] != &cb.raw[0] {
		t.Error("an unchanged model must not copy the body")
	}
}

func TestIncludeUsage(t *testing.T) {
	cb, _ := parseBody([]byte("{\"model\":\"m\",\"stream\":true}\n"))
	cb.includeUsage()
	if got := string(cb.raw); got != "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true}}\n" {
		t.Errorf("got %q", got)
	}
	var v map[string]any
	if err := json.Unmarshal(cb.raw, &v); err != nil {
		t.Errorf("result is not JSON: %v", err)
	}
}

func TestEmptyCompletion(t *testing.T) {
	cases := []struct {
		ep    endpoint
		body  string
		empty bool
	}{
		{epChat, chatOK("hi"), false},
		{epChat, chatEmpty, true},
		{epChat, `{"choices":[{"message":{"content":null,"tool_calls":[{"id":"1"}]}}]}`, false},
		{epChat, `{"choices":[{"message":{"content":null,"refusal":"no"}}]}`, false},
		{epChat, `{"choices":[]}`, true},
		{epChat, `{"object":"something else"}`, false},
		{epCompletions, `{"choices":[{"text":""}]}`, true},
		{epCompletions, `{"choices":[{"text":"x"}]}`, false},
		{epMessages, `{"content":[]}`, true},
		{epMessages, `{"content":[{"type":"text","text":""}]}`, true},
		{epMessages, `{"content":[{"type":"tool_use","id":"t"}]}`, false},
		{epResponses, `{"output":[{"type":"reasoning"}]}`, true},
		{epResponses, `{"output":[{"type":"message","content":[]}]}`, false},
		{epEmbeddings, `{"data":[]}`, false},
	}
	for _, c := range cases {
		if got := emptyCompletion(c.ep, []byte(c.body)); got != c.empty {
			t.Errorf("%s: empty=%v, want %v", c.body, got, c.empty)
		}
	}
}

func TestSSEUsageAcrossReads(t *testing.T) {
	var u sseUsage
	stream := "data: {\"choices\":[]}\n\ndata: {\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}}\n\ndata: [DONE]\n\n"
	for i := 0; i < len(stream); i += 5 {
		u.feed([]byte(stream[i:min(i+5, len(stream))]))
	}
	if got := u.counts.tokens(); got != 7 {
		t.Errorf("tokens %d, want 7", got)
	}
}

// TestEscapedModelKeyRoutes: a model key written with escapes is the model,
// as it is for the upstream, so a client cannot route on one model while
// the upstream reads another: the last "model", however spelled, wins.
func TestEscapedModelKeyRoutes(t *testing.T) {
	u := newUpstream(t)
	f := newFixture(t, []Credential{cred("c1", u)}, routesFor("gpt-4o", "c1"), nil)
	resp, body := f.post("/v1/chat/completions", `{"model":"not-served","mod\u0065l":"gpt-4o","messages":[]}`)
	if resp.StatusCode != 200 || u.count() != 1 {
		t.Fatalf("status %d after %d upstream calls, want 200 from gpt-4o: %s", resp.StatusCode, u.count(), body)
	}
	resp, body = f.post("/v1/chat/completions", `{"model":"gpt-4o","mod\u0065l":"not-served","messages":[]}`)
	if resp.StatusCode != 404 || u.count() != 1 || !strings.Contains(body, "not-served") {
		t.Fatalf("status %d after %d upstream calls, want 404 for not-served: %s", resp.StatusCode, u.count(), body)
	}
}
