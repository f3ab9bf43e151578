package proxy

import (
	"fmt"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
)

// The pairs the log's state dropped free their room: once the proxy keeps
// maxLazyPairs windows (and maxLazyPools pools), forgetting names lets new
// names be kept again instead of turned away, and a forgotten name comes back with fresh
// windows and a fresh pool. A routed pair's windows stay.
func TestForgottenPairsFreeTheirRoom(t *testing.T) {
	creds := []Credential{
		{Name: "c0", Type: domain.CredentialOpenAI, BaseURL: "http://127.0.0.1:1"},
		{Name: "c1", Type: domain.CredentialProxy, BaseURL: "http://127.0.0.1:1"},
	}
	p, err := New(Deps{Credentials: creds, MasterKey: "k", Clock: clockwork.NewFakeClockAt(testNow),
		Routes: []Route{{Model: "gpt", Credential: "c0"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// c1, a proxy credential whose models are not learned, serves any name.
	name := func(i int) string { return fmt.Sprintf("made-up-%05d", i) }
	for i := range maxLazyPairs {
		p.poolFor(name(i))
	}
	if got := p.lazyPairs.Load(); got != maxLazyPairs {
		t.Fatalf("%d lazy pairs kept, want %d", got, maxLazyPairs)
	}
	first := p.poolFor(name(0))
	first.cands[0].pair.use.reqs.add(testNow.Unix(), 1)
	if rpm, _ := p.Usage("c1", name(0)); rpm != 1 {
		t.Fatalf("usage of c1/%s = %d, want 1", name(0), rpm)
	}
	gpt := p.poolFor("gpt")
	gpt.cands[0].pair.use.reqs.add(testNow.Unix(), 1)

	turned := p.Unkept()
	for i := range 100 {
		p.Forget(domain.Key{Credential: "c1", Model: name(i)})
	}
	p.Forget(domain.Key{Credential: "c0", Model: "gpt"})
	if got := p.lazyPairs.Load(); got != maxLazyPairs-100 {
		t.Errorf("%d lazy pairs kept after forgetting 100, want %d", got, maxLazyPairs-100)
	}
	if rpm, _ := p.Usage("c0", "gpt"); rpm != 1 {
		t.Errorf("the routed pair's usage = %d after Forget, want 1 (kept)", rpm)
	}
	if rpm, _ := p.Usage("c1", name(0)); rpm != 0 {
		t.Errorf("a forgotten pair's usage = %d, want 0", rpm)
	}
	if again := p.poolFor(name(0)); again == first || again.cands[0].pair.use == first.cands[0].pair.use {
		t.Error("a forgotten name kept its pool or its windows")
	}
	for i := maxLazyPairs; i < maxLazyPairs+99; i++ {
		p.poolFor(name(i))
	}
	if got := p.Unkept(); got["pairs"] != turned["pairs"] || got["pools"] != turned["pools"] {
		t.Errorf("Unkept = %v after forgetting, %v before: want nothing more turned away", got, turned)
	}
}
