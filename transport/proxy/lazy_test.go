package proxy

import (
	"fmt"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
)

// With no models configured every credential serves any name a client
// sends. The pools and rate windows kept for such names are bounded, so
// clients inventing names cannot grow memory without end; a name past the
// bounds is still served.
func TestModelsNamedByClientsAreBounded(t *testing.T) {
	var creds []Credential
	for i := range 4 {
		creds = append(creds, Credential{Name: fmt.Sprintf("c%d", i), Type: domain.CredentialOpenAI, BaseURL: "http://127.0.0.1:1"})
	}
	p, err := New(Deps{Credentials: creds, MasterKey: "k", Clock: clockwork.NewFakeClockAt(testNow)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	names := maxLazyPools + 100
	for i := range names {
		if pl := p.poolFor(fmt.Sprintf("made-up-%d", i)); pl == nil || len(pl.cands) != 4 {
			t.Fatalf("name %d is not served by every credential: %+v", i, pl)
		}
	}
	if again, first := p.poolFor("made-up-0"), p.poolFor("made-up-0"); again != first {
		t.Fatal("a kept name's pool is built anew")
	}
	kept := 0
	p.pairs.Range(func(any, any) bool { kept++; return true })
	if kept > maxLazyPairs || p.table.Load().lazyCount.Load() > maxLazyPools {
		t.Fatalf("%d pairs and %d pools kept for %d names; bounds %d and %d",
			kept, p.table.Load().lazyCount.Load(), names, maxLazyPairs, maxLazyPools)
	}
	// Past the bounds a name gets a pool of its own each time, with
	// windows nobody keeps.
	last := fmt.Sprintf("made-up-%d", names-1)
	if a, b := p.poolFor(last), p.poolFor(last); a == b || a.cands[0].pair.use == b.cands[0].pair.use {
		t.Fatal("a name past the bounds was kept")
	}
	// What the bounds turned away is counted: the 100 names past
	// maxLazyPools and the two calls above, and every window past
	// maxLazyPairs (4 credentials per name).
	wantPairs := uint64(4*(names+2) - maxLazyPairs)
	if got := p.Unkept(); got["pools"] != 102 || got["pairs"] != wantPairs {
		t.Errorf("Unkept = %v, want 102 pools and %d pairs", got, wantPairs)
	}
}
