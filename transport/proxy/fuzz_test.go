package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
)

// Fuzz targets for every decoder of bytes from outside the process: a
// client's request body, and an upstream's answer (usage, stream events,
// error bodies). Their seed corpora run in every `go test`; fuzz one at a
// time with, e.g., go test ./transport/proxy -run '^$' -fuzz '^FuzzParseBody$' -fuzztime 45s.

// requestSeeds are request bodies of the shapes clients send.
var requestSeeds = []string{
	chatReq,
	`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":64}`,
	`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":false},"messages":[]}`,
	`{"model":"gpt-4o","prompt":"Say \"hi\"\\n","max_tokens":5,"temperature":0.2,"stop":["\n"]}`,
	`{"model":"gpt-4o","input":"hello","stream":true,"max_output_tokens":100,"tools":[{"type":"web_search"}]}`,
	`{"model":"gpt-4o","max_tokens":1024,"system":"be brief","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stream":true}`,
	`{"model":"gpt-4o","input":["a","b"],"encoding_format":"float"}`,
	"{\n  \"messages\": [{\"role\": \"user\", \"content\": \"\\u00e9\\ud83d\\ude00\"}],\n  \"model\": \"gpt-4o\"\n}\n",
	`{"model":"gpt-4o","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"model":{"type":"string"}}}}}]}`,
	`{"model":"m","mod\u0065l":"gpt-4o"}`,
	`{"model":"gpt-4o","stream":true,"stream":false}`,
	`{"model":"gpt-4o"} trailing`,
	`{"model":"gpt-4o","a":[1,2}`,
	`{"model":"a\"b","x":"\\"}`,
	`{"model":5}`, `{"model":""}`, `[]`, `{`, `"`, `{"model":}`, ``,
	`{"model":"gpt-4o","a":[tru]}`, `{"model":"gpt-4o","a":"\u00zz"}`, `{"model":"gpt-4o","a":1.}`,
	`{"model":"gpt-4o","a":-}`, `{"model":"gpt-4o","a":1e+}`, `{"model":"gpt-4o","a":{"b" 1}}`,
	"{\"model\":\"gpt-4o\",\"a\":\"\x01\"}", "{\"model\":\"gpt-4o\",\"a\":\"\xff\xfe\"}",
	`{"model":"gpt-4o"}{}`, `{"model":"gpt-4o","a":[1,]}`, `{"model":"gpt-4o","a":[1 2]}`,
}

// FuzzParseBody: no input makes the request body walker panic; on valid
// JSON it reads model, stream and stream_options as encoding/json does
// (last member wins, escaped keys decoded); and a body it accepts keeps
// every byte outside the model token when the model is replaced, and stays
// JSON when usage is asked for.
func FuzzParseBody(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cb, err := parseBody(bytes.Clone(b))
		if json.Valid(b) {
			checkBodyAgrees(t, b, cb, err)
		}
		checkStrict(t, b, err)
		if err != nil {
			return
		}
		out := cb.withModel([]byte(`"X"`))
		if !bytes.Equal(out[:cb.ms], b[:cb.ms]) || !bytes.Equal(out[cb.ms+3:], b[cb.me:]) {
			t.Errorf("withModel changed bytes outside the model: %q -> %q", b, out)
		}
		cb.includeUsage()
		if json.Valid(b) && !json.Valid(cb.raw) {
			t.Errorf("includeUsage made %q invalid: %q", b, cb.raw)
		}
	})
}

// checkStrict: the walker accepts exactly what encoding/json accepts,
// the object walk and a walk of any value alike.
func checkStrict(t *testing.T, b []byte, err error) {
	t.Helper()
	valid := json.Valid(b)
	top := bytes.TrimLeft(b, " \t\r\n")
	isObject := valid && len(top) > 0 && top[0] == '{'
	if _, ok := walkMembers(b, func([]byte, int, int) bool { return true }); ok != isObject {
		t.Errorf("%q: the object walk says %v, encoding/json says valid %v", b, ok, valid)
	}
	if errors.Is(err, errNotJSON) == isObject {
		t.Errorf("%q: parseBody err %v, encoding/json says valid %v", b, err, valid)
	}
	end, ok := scanValue(b, skipWS(b, 0), 0)
	if ok && skipWS(b, end) != len(b) {
		ok = false
	}
	if ok != valid {
		t.Errorf("%q: the value scan says %v, encoding/json says %v", b, ok, valid)
	}
}

// checkBodyAgrees compares parseBody's reading of a valid JSON body with
// encoding/json's.
func checkBodyAgrees(t *testing.T, b []byte, cb clientBody, err error) {
	t.Helper()
	top, isObject := jsonMembers(b)
	if !isObject {
		if !errors.Is(err, errNotJSON) {
			t.Errorf("%q is not an object: err %v, want %v", b, err, errNotJSON)
		}
		return
	}
	last := map[string]json.RawMessage{}
	for _, m := range top {
		last[m.key] = m.val
	}
	var model string
	isString := json.Unmarshal(last["model"], &model) == nil && len(last["model"]) > 0 && last["model"][0] == '"'
	switch {
	case !isString || model == "":
		if !errors.Is(err, errNoModel) {
			t.Errorf("%q: err %v, want %v", b, err, errNoModel)
		}
		return
	case err != nil:
		t.Errorf("%q: err %v, want model %q", b, err, model)
		return
	}
	if cb.model != model && utf8.Valid(last["model"]) {
		t.Errorf("%q: model %q, encoding/json reads %q", b, cb.model, model)
	}
	if want := string(last["stream"]) == "true"; cb.stream != want {
		t.Errorf("%q: stream %v, encoding/json reads %v", b, cb.stream, want)
	}
	if _, want := last["stream_options"]; cb.hasStreamOptions != want {
		t.Errorf("%q: stream_options %v, encoding/json reads %v", b, cb.hasStreamOptions, want)
	}
}

// member is one member of a JSON object as encoding/json reads it.
type member struct {
	key string
	val json.RawMessage
}

// jsonMembers lists the members of a valid JSON document that is an
// object, duplicates and all, in order; ok is false for any other value.
func jsonMembers(b []byte) (_ []member, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		out = append(out, member{key: tok.(string), val: v})
	}
	return out, true
}

// handlerRig is one proxy, built once per fuzz run, routing gpt-4o to an
// upstream on 127.0.0.1 that answers every request with a chat completion
// and keeps the last body it received.
type handlerRig struct {
	h    http.Handler
	mu   sync.Mutex
	last []byte
}

func newHandlerRig(f testing.TB) *handlerRig {
	hr := &handlerRig{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hr.mu.Lock()
		hr.last = b
		hr.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, chatOK("hello"))
	}))
	f.Cleanup(up.Close)
	p, err := New(Deps{
		Credentials: []Credential{{Name: "c1", Type: domain.CredentialOpenAI, BaseURL: up.URL + "/v1",
			APIKey: "sk-test-c1-0123456789abcdef"}},
		Routes:    routesFor("gpt-4o", "c1"),
		MasterKey: masterKey,
		Gate:      func() Gate { return mapGate{} },
		Record:    func(domain.Outcome) {},
		Logger:    hclog.NewNullLogger(),
		Clock:     clockwork.NewFakeClockAt(clockStart),
	})
	if err != nil {
		f.Fatalf("New: %v", err)
	}
	f.Cleanup(p.Close)
	hr.h = p.Handler()
	return hr
}

// post sends b to path with the master key through the handler, and
// returns the answer and the body the upstream received (nil for none).
func (hr *handlerRig) post(path string, b []byte) (*httptest.ResponseRecorder, []byte) {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+masterKey)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	hr.mu.Lock()
	hr.last = nil
	hr.mu.Unlock()
	hr.h.ServeHTTP(rec, req)
	hr.mu.Lock()
	defer hr.mu.Unlock()
	return rec, hr.last
}

var fuzzPaths = []string{"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages", "/v1/embeddings"}

// FuzzHandlerBody: whatever body a client posts to any surface, the real
// handler answers without a panic and never with a 5xx (the upstream is
// healthy); a body the walker rejects is a 400 with the reason; a valid
// JSON body for a served model reaches the upstream still valid JSON.
func FuzzHandlerBody(f *testing.F) {
	for i, s := range requestSeeds {
		f.Add(uint8(i), []byte(s))
	}
	hr := newHandlerRig(f)
	if rec, sent := hr.post(fuzzPaths[0], []byte(chatReq)); rec.Code != http.StatusOK || sent == nil {
		f.Fatalf("the rig does not serve %s: %d %s", chatReq, rec.Code, rec.Body)
	}
	f.Fuzz(func(t *testing.T, ep uint8, b []byte) {
		path := fuzzPaths[int(ep)%len(fuzzPaths)]
		rec, sent := hr.post(path, b)
		if rec.Code >= 500 {
			t.Fatalf("POST %s %q: status %d: %s", path, b, rec.Code, rec.Body)
		}
		if _, err := parseBody(bytes.Clone(b)); err != nil {
			var e struct{ Error struct{ Message string } }
			_ = json.Unmarshal(rec.Body.Bytes(), &e)
			if rec.Code != http.StatusBadRequest || !strings.Contains(e.Error.Message, err.Error()) {
				t.Fatalf("POST %s %q: status %d %s, want 400 %q", path, b, rec.Code, rec.Body, err)
			}
			return
		}
		if sent != nil && !json.Valid(b) {
			t.Fatalf("POST %s %q: invalid JSON reached the upstream", path, b)
		}
		if rec.Code == http.StatusOK && json.Valid(b) && !json.Valid(sent) {
			t.Fatalf("POST %s %q: the upstream got invalid JSON %q", path, b, sent)
		}
	})
}
