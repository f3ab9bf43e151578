package proxy

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// reloadDeps are the fixture's deps with other credentials and routes.
func reloadDeps(f *fixture, creds []Credential, routes []Route) Deps {
	return Deps{
		Credentials: creds, Routes: routes, MasterKey: masterKey, ClientKeys: []string{"client-key-1"},
		Gate: func() Gate { return f.gate }, Settings: func() Settings { return f.set }, Record: f.out.record,
	}
}

// An invalid reload returns every problem and changes nothing: the old
// credentials keep serving.
func TestReloadRefusesInvalidDepsAndKeepsServing(t *testing.T) {
	a := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", a)}, routesFor("m", "a"), nil)
	bad := reloadDeps(f, []Credential{cred("a", a), {Name: "b", Type: domain.CredentialOpenAI, BaseURL: "ftp://x"}},
		[]Route{{Model: "m", Credential: "a"}, {Model: "m", Credential: "nobody"}})
	err := f.p.Reload(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), `credential "b"`) || !strings.Contains(err.Error(), `unknown credential "nobody"`) {
		t.Fatalf("Reload of invalid deps = %v, want both problems", err)
	}
	if resp, body := f.post("/v1/chat/completions", `{"model":"m"}`); resp.StatusCode != 200 || a.count() != 1 {
		t.Fatalf("after a refused reload: %d %s, upstream a saw %d", resp.StatusCode, body, a.count())
	}
}

// A proxy credential whose base URL a reload changes learns its models
// again, from the new upstream, before Reload returns; a reload that adds
// the first proxy credential starts the relearning loop.
func TestReloadRelearnsProxyCredentials(t *testing.T) {
	a := newUpstream(t)
	one := newRelay(t, `{"object":"list","data":[{"id":"m1"}]}`)
	two := newRelay(t, `{"object":"list","data":[{"id":"m2"}]}`)
	relay := func(rl *relay) Credential {
		return Credential{Name: "relay", Type: domain.CredentialProxy, BaseURL: rl.srv.URL, APIKey: "relay-key-0123456789"}
	}
	f := newFixture(t, []Credential{cred("a", a)}, routesFor("gpt-4o", "a"), nil)
	f.p.Start(context.Background()) // no proxy credential: no loop yet

	if err := f.p.Reload(context.Background(), reloadDeps(f, []Credential{cred("a", a), relay(one)}, routesFor("gpt-4o", "a"))); err != nil {
		t.Fatal(err)
	}
	if got := f.p.Models(); !slices.Equal(got, []string{"gpt-4o", "m1"}) {
		t.Fatalf("models after adding the relay = %v", got)
	}
	if err := f.p.Reload(context.Background(), reloadDeps(f, []Credential{cred("a", a), relay(two)}, routesFor("gpt-4o", "a"))); err != nil {
		t.Fatal(err)
	}
	if got := f.p.Models(); !slices.Equal(got, []string{"gpt-4o", "m2"}) {
		t.Fatalf("models after moving the relay = %v, want m1 gone and m2 learned", got)
	}
	two.mu.Lock()
	two.list = `{"object":"list","data":[{"id":"m3"}]}`
	two.mu.Unlock()
	testkit.Eventually(t, "the relearning loop to learn m3", func() bool {
		f.clock.Advance(defaultRefresh + time.Second)
		return slices.Contains(f.p.Models(), "m3")
	})
}

// Requests running while reloads swap the credentials back and forth all
// succeed: each keeps the table it started with.
func TestReloadUnderTrafficDropsNoRequest(t *testing.T) {
	a, b := newUpstream(t), newUpstream(t)
	f := newFixture(t, []Credential{cred("a", a)}, routesFor("m", "a"), nil)
	sets := [][]Credential{{cred("b", b)}, {cred("a", a)}}
	done := make(chan struct{})
	failed := make(chan string, 64)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				resp, body := f.post("/v1/chat/completions", `{"model":"m"}`)
				if resp.StatusCode != 200 {
					select {
					case failed <- body:
					default:
					}
				}
			}
		}()
	}
	for i := range 50 {
		set := sets[i%2]
		if err := f.p.Reload(context.Background(), reloadDeps(f, set, routesFor("m", set[0].Name))); err != nil {
			t.Fatal(err)
		}
		served := a.count() + b.count()
		testkit.Eventually(t, "a request served between reloads", func() bool { return a.count()+b.count() > served })
	}
	close(done)
	wg.Wait()
	select {
	case body := <-failed:
		t.Fatalf("a request during the reloads failed: %s", body)
	default:
	}
	if a.count() == 0 || b.count() == 0 {
		t.Fatalf("requests a=%d b=%d: both credential sets should have served", a.count(), b.count())
	}
}
