package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// TestUnusableModelWarnIsRateLimited: requests for a benched model are each
// answered 429, but the WARN they cause is written once per interval per
// model (on the proxy's clock), the next line counting the ones held back;
// another model has its own interval.
func TestUnusableModelWarnIsRateLimited(t *testing.T) {
	a := newUpstream(t)
	routes := append(routesFor("gpt-4o", "a"), routesFor("gpt-4o-mini", "a")...)
	f := newFixture(t, []Credential{cred("a", a)}, routes, nil)
	until := clockStart.Add(time.Hour)
	f.gate[domain.Key{Credential: "a", Model: "gpt-4o"}] = domain.Block{Reason: domain.BlockBenched, Until: until}
	f.gate[domain.Key{Credential: "a", Model: "gpt-4o-mini"}] = domain.Block{Reason: domain.BlockBenched, Until: until}
	ask := func(model string, n int) {
		t.Helper()
		for range n {
			res, body := f.post("/v1/chat/completions", `{"model":"`+model+`","messages":[]}`)
			if res.StatusCode != 429 {
				t.Fatalf("%s: status %d, want 429: %s", model, res.StatusCode, body)
			}
		}
	}
	lines := func() []string {
		var out []string
		for _, l := range strings.Split(f.logs.String(), "\n") {
			if strings.Contains(l, "request exhausted its candidates") {
				out = append(out, l)
			}
		}
		return out
	}

	ask("gpt-4o", 50)
	ask("gpt-4o-mini", 3)
	got := lines()
	if len(got) != 2 || !strings.Contains(got[0], "model=gpt-4o ") || !strings.Contains(got[0], "suppressed=0") ||
		!strings.Contains(got[1], "model=gpt-4o-mini") {
		t.Fatalf("WARN lines after 50 + 3 requests within the interval:\n%s", strings.Join(got, "\n"))
	}
	f.clock.Advance(unusableWarnEvery - time.Second)
	ask("gpt-4o", 1)
	if n := len(lines()); n != 2 {
		t.Fatalf("a line within the interval: %d lines", n)
	}
	f.clock.Advance(time.Second)
	ask("gpt-4o", 1)
	got = lines()
	if len(got) != 3 || !strings.Contains(got[2], "model=gpt-4o ") || !strings.Contains(got[2], "suppressed=50") {
		t.Fatalf("the line after the interval does not count the 50 held back:\n%s", strings.Join(got, "\n"))
	}
	if a.count() != 0 {
		t.Errorf("a benched model reached the upstream %d times", a.count())
	}
}
