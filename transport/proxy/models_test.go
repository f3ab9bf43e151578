package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/airouter/airouter/domain"
)

// relay is another router behind a proxy credential: it lists models and
// answers chat with the model it was sent.
type relay struct {
	srv    *httptest.Server
	mu     sync.Mutex
	list   string
	status int
	models []string // model tokens seen in chat bodies
	auth   []string
}

func newRelay(t *testing.T, list string) *relay {
	rl := &relay{list: list, status: 200}
	rl.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rl.mu.Lock()
		defer rl.mu.Unlock()
		rl.auth = append(rl.auth, r.Header.Get("Authorization"))
		if r.URL.Path == "/v1/models" {
			w.WriteHeader(rl.status)
			_, _ = io.WriteString(w, rl.list)
			return
		}
		b, _ := io.ReadAll(r.Body)
		m, _ := stringValue(field(b, "model"))
		rl.models = append(rl.models, m)
		_, _ = io.WriteString(w, chatOK("relayed"))
	}))
	t.Cleanup(rl.srv.Close)
	return rl
}

func (rl *relay) seenModels() []string {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return slices.Clone(rl.models)
}

func TestProxyCredentialLearnsItsModels(t *testing.T) {
	a := newUpstream(t)
	rl := newRelay(t, `{"object":"list","data":[{"id":"m2"},{"id":"m1"},{"id":"m1"}]}`)
	creds := []Credential{cred("a", a), {Name: "relay", Type: domain.CredentialProxy, BaseURL: rl.srv.URL, APIKey: "relay-key-0123456789"}}
	f := newFixture(t, creds, []Route{{Model: "gpt-4o", Credential: "a", UpstreamModel: "gpt-4o-real"}}, func(d *Deps) {
		d.Aliases = map[string]string{"fast": "m1"}
	})

	// Before learning, the relay serves any model.
	if resp, _ := f.post("/v1/chat/completions", `{"model":"m9"}`); resp.StatusCode != 200 {
		t.Fatalf("unlearned relay, unknown model: status %d", resp.StatusCode)
	}
	if got := f.p.Models(); !slices.Equal(got, []string{"gpt-4o"}) {
		t.Errorf("models before learning %v", got)
	}

	f.p.Start(t.Context())
	if got := f.p.Models(); !slices.Equal(got, []string{"gpt-4o", "m1", "m2"}) {
		t.Fatalf("models after learning %v", got)
	}
	if got := f.p.Learned(); len(got) != 1 || !slices.Equal(got["relay"], []string{"m1", "m2"}) {
		t.Errorf("learned per credential %v", got)
	}
	if resp, body := f.post("/v1/chat/completions", `{"model":"m9"}`); resp.StatusCode != 404 {
		t.Errorf("a model nobody serves after learning: status %d %s", resp.StatusCode, body)
	}
	if resp, _ := f.post("/v1/chat/completions", `{"model":"fast"}`); resp.StatusCode != 200 {
		t.Errorf("alias of a learned model: status %d", resp.StatusCode)
	}
	// gpt-4o now belongs to a only: the relay did not list it.
	for range 4 {
		f.post("/v1/chat/completions", chatReq)
	}
	if got := rl.seenModels(); !slices.Equal(got, []string{"m9", "m1"}) {
		t.Errorf("relay was sent %v, want the public ids m9 then m1 (never the upstream name)", got)
	}
	for _, auth := range rl.auth {
		if auth != "Bearer relay-key-0123456789" {
			t.Errorf("relay got Authorization %q", auth)
		}
	}

	// A failed refresh keeps what was learned.
	rl.mu.Lock()
	rl.status = 500
	rl.mu.Unlock()
	if err := f.p.RefreshModels(t.Context()); err == nil {
		t.Error("a failed refresh reported no error")
	}
	if got := f.p.Models(); !slices.Equal(got, []string{"gpt-4o", "m1", "m2"}) {
		t.Errorf("models after a failed refresh %v", got)
	}
	f.p.Close()
}

func TestNoRoutesMeansEveryCredentialServesEveryModel(t *testing.T) {
	a, b := newUpstream(t), newUpstream(t)
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, nil, nil)
	for _, m := range []string{"x", "y", "x", "y"} {
		if resp, _ := f.post("/v1/chat/completions", `{"model":"`+m+`"}`); resp.StatusCode != 200 {
			t.Fatalf("model %s: status %d", m, resp.StatusCode)
		}
	}
	if a.count() != 2 || b.count() != 2 {
		t.Errorf("a=%d b=%d, want each model rotated over both", a.count(), b.count())
	}
	if rpm, _ := f.p.Usage("a", "x"); rpm != 1 {
		t.Errorf("pair usage %d", rpm)
	}
}

// Rebuilding the table while requests are routed is safe (run with -race)
// and keeps the rate-limit windows.
func TestRefreshWhileServing(t *testing.T) {
	a := newUpstream(t)
	rl := newRelay(t, `{"data":[{"id":"gpt-4o"}]}`)
	creds := []Credential{cred("a", a), {Name: "relay", Type: domain.CredentialProxy, BaseURL: rl.srv.URL}}
	f := newFixture(t, creds, []Route{{Model: "gpt-4o", Credential: "a", RPM: 1000}}, nil)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				f.post("/v1/chat/completions", chatReq)
			}
		}()
	}
	for range 10 {
		rl.mu.Lock()
		rl.list = `{"data":[{"id":"gpt-4o"},{"id":"m` + string(rune('a'+len(rl.models)%26)) + `"}]}`
		rl.mu.Unlock()
		_ = f.p.RefreshModels(t.Context())
	}
	wg.Wait()
	rpmA, _ := f.p.Usage("a", "gpt-4o")
	rpmR, _ := f.p.Usage("relay", "gpt-4o")
	if rpmA+rpmR != 100 {
		t.Errorf("windows hold %d+%d requests, want all 100", rpmA, rpmR)
	}
}
