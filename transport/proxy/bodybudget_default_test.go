package proxy

import (
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/airouter/airouter/internal/testkit"
)

// Without a body budget of its own, the proxy holds at most four bodies of
// max_body_size at once: four concurrent clients declaring the largest body
// and sending it slowly hold the room, a fifth waits for it, and once one
// of the four is in, every request is served.
func TestConcurrentLargeBodiesAreBoundedByDefault(t *testing.T) {
	const maxBody = 1000
	up := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), func(d *Deps) { d.MaxBodyBytes = maxBody })
	full := padTo(maxBody, "")
	var slow []net.Conn
	var done []<-chan reply
	for range 4 {
		conn, d := f.rawRequest("/v1/chat/completions", "Content-Length: 1000", full[:10])
		slow, done = append(slow, conn), append(done, d)
	}
	testkit.Eventually(t, "four bodies to hold their declared length", func() bool { return f.p.budget.inUse() >= 4*maxBody })
	_, fifth := f.rawRequest("/v1/chat/completions", "Content-Length: 1000", full)
	testkit.Eventually(t, "the fifth body to wait for room", func() bool { return f.p.budget.waiting() == 1 })
	notYet(t, fifth)
	if used := f.p.budget.inUse(); used > 4*maxBody+1 {
		t.Fatalf("%d bytes of room held, want at most four bodies' %d", used, 4*maxBody)
	}

	if _, err := io.WriteString(slow[0], full[10:]); err != nil {
		t.Fatal(err)
	}
	for i, d := range []<-chan reply{done[0], fifth} {
		if resp, body := f.await(d); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d body %s", i, resp.StatusCode, body)
		}
	}
	for i, conn := range slow[1:] {
		if _, err := io.WriteString(conn, full[10:]); err != nil {
			t.Fatal(err)
		}
		if resp, body := f.await(done[i+1]); resp.StatusCode != http.StatusOK {
			t.Fatalf("slow request %d: status %d body %s", i+1, resp.StatusCode, body)
		}
	}
	if up.count() != 5 {
		t.Errorf("upstream saw %d requests, want 5", up.count())
	}
	testkit.Eventually(t, "the body budget to be released", func() bool { return f.p.budget.inUse() == 0 })
}
