package adminapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// referenceHealth serves the unfiltered /health as encoding/json writes
// it: the document built whole (health) and encoded by writeJSON, on a real
// server, so its answer's bytes and framing headers can be compared with
// /health's.
func referenceHealth(r *rig) string {
	r.t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeHealth(w, r.api.health(r.api.current(), r.api.now().UTC(), healthFilter{}))
	}))
	r.t.Cleanup(srv.Close)
	return srv.URL
}

// get is a GET of url by a real client: the status, the headers and the body.
func get(t testing.TB, url string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, body
}

// oddNames publishes pairs of model names that need escaping, a ban whose
// reason does, a shadow ban, a learned model, failures of credentials
// named as prefixes of one another (cred-1, cred-10, cred-1_x: "cred-10:"
// < "cred-1:" < "cred-1_x:"), one of them banned after failures of
// codes whose strings sort unlike their numbers ("1000" < "429" < "500" <
// "97"; 97 and 1000 not watched), and 1,100 pairs only the log names
// (some past maxLogPairs, so omitted).
func oddNames(r *rig) {
	at := r.clock.Now()
	var evs []domain.Event
	for i, model := range []string{`<b>&"quoted"`, "tab\there\nline", "caf\u00e9 \u2028\u2029", "bad\xffutf8", `back\slash`, "ctl\x01\x1f\x7f", "a:b:c"} {
		evs = append(evs, outcome(fmt.Sprintf("odd/%d", i), "openai-2", model, 503, at))
	}
	evs = append(evs, autoBan("openai-2", `<b>&"quoted"`, 503, 3, at, time.Hour, 77))
	evs[len(evs)-1].Ban.Reason = "3 x 503 <upstream> & \"down\"\n\u2028"
	until := at.Add(5 * time.Minute)
	evs = append(evs, domain.Event{V: domain.SchemaVersion, Kind: domain.KindBanShadowed, ID: "shadow/relay/gpt-4o/1", At: at,
		Shadowed: &domain.Ban{Credential: "relay", Model: "gpt-4o", Origin: domain.OriginFail2Ban,
			Reason: "2 x 400 <rule>", ErrorCode: 400, Since: at, Until: &until, Failures: 2}})
	for i := range 1100 {
		evs = append(evs, outcome(fmt.Sprintf("many/%d", i), "cred-1", fmt.Sprintf("log-only-%04d", i), 500, at))
	}
	evs = append(evs, outcome("p/10", "cred-10", "gpt-4o", 429, at), outcome("p/1_", "cred-1_x", "gpt-4o", 429, at),
		autoBan("cred-1", "log-only-1099", 500, 3, at, 0, 99))
	for i, code := range []int{97, 1000, 500, 502, 500} {
		evs = append(evs, outcome(fmt.Sprintf("p/1_/%d", i), "cred-1_x", "gpt-4o", code, at))
	}
	evs = append(evs, autoBan("cred-1_x", "gpt-4o", 500, 2, at, time.Hour, 100))
	r.publish(evs...)
	r.learn(Pair{Credential: "claude-1", Model: "claude-<learned>"})
}

// The unfiltered /health, written as it walks the pairs, is the document
// encoding/json writes for it byte for byte, with the same status and
// framing, on every kind of state: fresh, every kind of ban, names and
// reasons that need escaping, pairs omitted past the bound, and every pair
// banned (503, judged by counting every pair).
func TestWholeHealthIsTheReferenceBytes(t *testing.T) {
	prefixed := func(d *Deps) {
		d.Credentials = append(append([]Credential(nil), testCreds...),
			Credential{Name: "cred-1", Type: "openai"}, Credential{Name: "cred-10", Type: "openai", Weight: 3},
			Credential{Name: "cred-1_x", Type: "openai"})
		d.ConfiguredPairs = append(append([]Pair(nil), testPairs...),
			Pair{Credential: "cred-10", Model: "gpt-4o", RPM: 7}, Pair{Credential: "cred-1", Model: "gpt-4o"},
			Pair{Credential: "cred-1_x", Model: "gpt-4o"})
	}
	cases := []struct {
		name   string
		edit   func(*Deps)
		setup  func(r *rig)
		status int
	}{
		{"fresh", nil, func(*rig) {}, 200},
		{"mixed", nil, mixedPool, 200},
		{"odd names", prefixed, func(r *rig) { mixedPool(r); oddNames(r) }, 200},
		{"nothing watched", func(d *Deps) { prefixed(d); d.Watched = nil }, func(r *rig) { mixedPool(r); oddNames(r) }, 200},
		{"all banned", nil, allBannedPool, 503},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRigEdit(t, c.edit)
			c.setup(r)
			status, h, body := get(t, r.srv.URL+"/health")
			wantStatus, wantH, want := get(t, referenceHealth(r))
			if status != c.status || wantStatus != c.status {
				t.Errorf("status %d, reference %d, want %d", status, wantStatus, c.status)
			}
			if !bytes.Equal(body, want) {
				t.Errorf("/health differs from encoding/json's document:\n got %s\nwant %s", body, want)
			}
			for _, k := range []string{"Content-Type", "Cache-Control", "Content-Length"} {
				if h.Get(k) != wantH.Get(k) {
					t.Errorf("%s: %q, reference %q", k, h.Get(k), wantH.Get(k))
				}
			}
		})
	}
}

// maxWrite is a handler that records the largest single write of next's
// answer.
type maxWrite struct {
	http.ResponseWriter
	largest *atomic.Int64
}

func (w maxWrite) Write(p []byte) (int, error) {
	if n := int64(len(p)); n > w.largest.Load() {
		w.largest.Store(n)
	}
	return w.ResponseWriter.Write(p)
}

// serveThrough serves r's admin API on 127.0.0.1, each response written
// through the writer wrap makes of the server's.
func serveThrough(t *testing.T, r *rig, wrap func(http.ResponseWriter) http.ResponseWriter) *httptest.Server {
	h := r.api.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.ServeHTTP(wrap(w), req)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The unfiltered /health goes to the client as it is written: on 2,000
// pairs (a document of about 400 KB) no write carries more than a flush's
// worth, and the client reads the document encoding/json writes.
func TestWholeHealthStreams(t *testing.T) {
	r := scaleRig(t, 20, 100)
	var largest atomic.Int64
	srv := serveThrough(t, r, func(w http.ResponseWriter) http.ResponseWriter { return maxWrite{w, &largest} })
	status, hd, body := get(t, srv.URL+"/health")
	_, _, want := get(t, referenceHealth(r))
	if status != 200 || !bytes.Equal(body, want) {
		t.Fatalf("status %d, body of %d bytes equal to encoding/json's %d: %v", status, len(body), len(want), bytes.Equal(body, want))
	}
	if len(body) < 8*healthFlushAt {
		t.Fatalf("the document is %d bytes: too small to show streaming", len(body))
	}
	if n := largest.Load(); n > healthFlushAt+4<<10 {
		t.Errorf("the largest write is %d bytes of a %d-byte document, want at most %d", n, len(body), healthFlushAt+4<<10)
	}
	if hd.Get("Content-Length") != "" {
		t.Errorf("Content-Length %q on a streamed document", hd.Get("Content-Length"))
	}
}

// brokenAfter is a response writer whose connection breaks after its
// first write, as net/http's does once the client has gone: every later
// write fails and is counted.
type brokenAfter struct {
	http.ResponseWriter
	writes *atomic.Int64
}

func (w brokenAfter) Write(p []byte) (int, error) {
	if w.writes.Add(1) > 1 {
		return 0, io.ErrClosedPipe
	}
	return w.ResponseWriter.Write(p)
}

// A client gone mid-document ends the walk over the pairs: the write that
// fails is the last one tried, not one of the dozen the document needs.
func TestWholeHealthStopsWhenTheClientIsGone(t *testing.T) {
	r := scaleRig(t, 20, 100)
	var writes atomic.Int64
	srv := serveThrough(t, r, func(w http.ResponseWriter) http.ResponseWriter { return brokenAfter{w, &writes} })
	status, _, body := get(t, srv.URL+"/health")
	if status != 200 || len(body) == 0 || len(body) > healthFlushAt+4<<10 {
		t.Fatalf("status %d with %d bytes, want 200 and the first write only", status, len(body))
	}
	if n := writes.Load(); n != 2 {
		t.Errorf("%d writes tried, want 2: the one that went out and the one that failed", n)
	}
}

// farPool is a rig whose API reads a snapshot folded in the test (not
// from the log, whose JSON cannot carry such a time): creds × models
// configured pairs, each with a failure, and a cooldown of the last pair
// until year 10000.
func farPool(t *testing.T, creds, models int) *rig {
	cs := make([]Credential, creds)
	var pairs []Pair
	live := projections.NewLive(nil)
	for c := range cs {
		cs[c] = Credential{Name: fmt.Sprintf("cred-%04d", c), Type: "openai"}
		for m := range models {
			pairs = append(pairs, Pair{Credential: cs[c].Name, Model: fmt.Sprintf("model-%03d", m)})
			live.Apply(outcome(fmt.Sprintf("o/%d/%d", c, m), cs[c].Name, pairs[len(pairs)-1].Model, 500, t0), 1)
		}
	}
	last := pairs[len(pairs)-1]
	live.Apply(domain.Event{V: 1, Kind: domain.KindCooldownStarted, ID: "cooldown/far", At: t0,
		Cooldown: &domain.Cooldown{Credential: last.Credential, Model: last.Model, Until: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Status: 429, CauseSeq: 1}}, 0)
	return newRigEdit(t, func(d *Deps) {
		d.Credentials, d.ConfiguredPairs, d.Snapshot, d.WaitFor = cs, pairs, live.Load, live.WaitFor
	})
}

// A time encoding/json cannot encode (which no event on the log carries)
// fails /health as the document built whole fails, with writeJSON's 500,
// while nothing has gone to the client; once some has, the document is
// cut short, so the client reads invalid JSON rather than a wrong
// document, and the failure is logged.
func TestWholeHealthWithAnUnencodableTime(t *testing.T) {
	r := farPool(t, 2, 3)
	status, _, body := get(t, r.srv.URL+"/health")
	wantStatus, _, want := get(t, referenceHealth(r))
	if status != 500 || wantStatus != 500 || !bytes.Equal(body, want) {
		t.Errorf("%d %s, want encoding/json's %d %s", status, body, wantStatus, want)
	}

	r = farPool(t, 20, 100) // the far cooldown is the last of 2,000 entries
	status, _, body = get(t, r.srv.URL+"/health")
	if status != 200 || len(body) < healthFlushAt || json.Valid(body) {
		t.Errorf("status %d, %d bytes, valid JSON %v: want 200 and a document cut short", status, len(body), json.Valid(body))
	}
	if !strings.Contains(r.logs.String(), "/health cut short") {
		t.Errorf("no log line names the cut: %s", r.logs.String())
	}
}
