package proxy

import (
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// The outcome of an attempt carries this replica's id and the tokens it was
// charged; another replica's requests, counted with CountPeer, fill the
// same windows the selection checks: with rpm 2 on the credential, one
// request of this replica and peers' leave no room. A peer's
// request from the future counts now, one older than the window not at
// all, and a model with no windows here gets none made for it.
func TestPeersCountInTheRateWindows(t *testing.T) {
	up := newUpstream(t)
	c := cred("a", up)
	c.RPM = 2
	f := newFixture(t, []Credential{c}, routesFor("gpt-4o", "a"), func(d *Deps) { d.Replica = "r1" })
	body := `{"model":"gpt-4o","messages":[]}`
	if resp, _ := f.post("/v1/chat/completions", body); resp.StatusCode != 200 {
		t.Fatalf("first request = %d", resp.StatusCode)
	}
	if o := f.out.wait(t, 1)[0]; o.Replica != "r1" || o.Tokens != 30 {
		t.Errorf("outcome replica %q tokens %d, want r1 and the response's 30", o.Replica, o.Tokens)
	}
	now := f.clock.Now()
	f.p.CountPeer("a", "gpt-4o", now.Add(-2*time.Minute), 100) // too old: nothing
	if rpm, tpm := f.p.Usage("a", ""); rpm != 1 || tpm != 30 {
		t.Fatalf("after an old peer request: rpm %d tpm %d, want 1 and 30", rpm, tpm)
	}
	f.p.CountPeer("a", "other-model", now, 7)            // the credential's windows only
	f.p.CountPeer("a", "gpt-4o", now.Add(time.Hour), 12) // a clock ahead: counts now
	if rpm, tpm := f.p.Usage("a", "gpt-4o"); rpm != 2 || tpm != 42 {
		t.Errorf("pair usage rpm %d tpm %d, want 2 and 42", rpm, tpm)
	}
	if rpm, tpm := f.p.Usage("a", ""); rpm != 3 || tpm != 49 {
		t.Errorf("credential usage rpm %d tpm %d, want 3 and 49 (the other model's request counts on the credential)", rpm, tpm)
	}
	if _, ok := f.p.pairs.Load(domain.Key{Credential: "a", Model: "other-model"}); ok {
		t.Errorf("CountPeer made windows for a pair")
	}
	if resp, _ := f.post("/v1/chat/completions", body); resp.StatusCode != 429 {
		t.Errorf("a request past the cluster's rpm 2 = %d, want 429", resp.StatusCode)
	}
}

// BenchmarkCountPeer is the cost, on the projection writer, of counting one
// outcome of another replica.
func BenchmarkCountPeer(b *testing.B) {
	p, err := New(Deps{Credentials: []Credential{{Name: "a", Type: domain.CredentialOpenAI, BaseURL: "http://127.0.0.1:1/v1", APIKey: "k", RPM: 100}},
		Routes: []Route{{Model: "gpt-4o", Credential: "a", RPM: 100}}, MasterKey: masterKey})
	if err != nil {
		b.Fatal(err)
	}
	at := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		p.CountPeer("a", "gpt-4o", at, 30)
	}
}
