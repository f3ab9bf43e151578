package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airouter/airouter/domain"
)

// writeCountingListener counts the writes made to the connections it
// accepts: each is one write to the socket.
type writeCountingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l writeCountingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return writeCountingConn{Conn: c, writes: l.writes}, nil
}

type writeCountingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c writeCountingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// TestStreamEndGoesOutWithItsLastChunk holds the relay to one socket write
// for the read that ends a stream: an upstream that sends its last chunks
// and its end together (as a server does when its handler returns) costs
// the client connection one write for them, not a flushed write and then
// another for the end of the chunked body. The first chunk is still
// flushed on its own, before the upstream sends the rest.
func TestStreamEndGoesOutWithItsLastChunk(t *testing.T) {
	release := make(chan struct{})
	last := chunk("lo") + usageChunk + "data: [DONE]\n\n"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, chunk("Hel"))
		_ = http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, last) // not flushed: it leaves with the end
	}))
	t.Cleanup(up.Close)
	f := newFixture(t, []Credential{{Name: "a", Type: domain.CredentialOpenAI, APIKey: "sk-a-0123456789", BaseURL: up.URL + "/v1"}},
		routesFor("gpt-4o", "a"), nil)
	var writes atomic.Int64
	srv := httptest.NewUnstartedServer(f.p.Handler())
	srv.Listener = writeCountingListener{Listener: srv.Listener, writes: &writes}
	srv.Start()
	t.Cleanup(srv.Close)

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(streamReq))
	req.Header.Set("Authorization", "Bearer "+masterKey)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if ev := readEvent(t, r); ev != chunk("Hel") {
		t.Fatalf("first event %q", ev)
	}
	if n := writes.Load(); n != 1 {
		t.Fatalf("%d writes for the headers and the first chunk, want 1", n)
	}
	close(release)
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != last {
		t.Fatalf("rest of the stream %q (%v), want %q", rest, err, last)
	}
	if n := writes.Load(); n != 2 {
		t.Errorf("%d writes in all, want 2: the last chunks and the end of the body in one", n)
	}
}

// TestUpstreamRequestWritesItsHeadersWithItsBody holds the proxy to
// sending a request's headers with its body: a request that fits the
// transport's 4 KB write buffer is one socket write where flushing the
// headers on their own made it two, and a 20 KB one stays at two (the
// buffer, then the rest).
func TestUpstreamRequestWritesItsHeadersWithItsBody(t *testing.T) {
	up := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), nil)
	var writes atomic.Int64
	dial := f.p.transport.DialContext
	f.p.transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return writeCountingConn{Conn: c, writes: &writes}, nil
	}
	for _, c := range []struct {
		content string
		writes  int64
	}{{"hi", 1}, {"hi", 1}, {strings.Repeat("long history ", 1500), 2}} {
		chat := `{"model":"gpt-4o","messages":[{"role":"user","content":"` + c.content + `"}]}`
		before := writes.Load()
		if resp, body := f.post("/v1/chat/completions", chat); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		if n := writes.Load() - before; n != c.writes {
			t.Errorf("a %d-byte request took %d writes to the upstream, want %d", len(chat), n, c.writes)
		}
		if got := up.requests()[up.count()-1].body; string(got) != chat {
			t.Errorf("the upstream got %d bytes, want the %d sent", len(got), len(chat))
		}
	}
}
