package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// monitoring.pprof_listen serves the runtime's profiles and an execution
// trace on a port of their own; the proxy's port does not serve them.
func testProfiles(t *testing.T, bin string) {
	port := freePorts(t, 1)[0]
	p := startOneCredential(t, bin, fmt.Sprintf("monitoring:\n  pprof_listen: 127.0.0.1:%d\n", port), "http://127.0.0.1:1")
	base := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", port)
	get := func(url string) (int, []byte) {
		t.Helper()
		resp, err := p.client.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		return resp.StatusCode, b
	}
	if st, body := get(base); st != http.StatusOK || !bytes.Contains(body, []byte("goroutine")) {
		t.Errorf("GET /debug/pprof/ on pprof_listen: %d, want 200 listing the profiles:\n%s", st, tail(body, 500))
	}
	if st, body := get(base + "trace?seconds=0.2"); st != http.StatusOK || !bytes.HasPrefix(body, []byte("go 1.")) {
		t.Errorf("GET /debug/pprof/trace: %d, %d bytes starting %q; want 200 and an execution trace", st, len(body), tail(body[:min(len(body), 16)], 16))
	}
	if st, body := get(base + "goroutine?debug=1"); st != http.StatusOK || !bytes.Contains(body, []byte("eventlog")) {
		t.Errorf("GET /debug/pprof/goroutine: %d, want 200 with the event log's goroutines:\n%s", st, tail(body, 500))
	}
	if st, _ := get(p.url + "/debug/pprof/"); st != http.StatusNotFound {
		t.Errorf("the proxy's port answers /debug/pprof/ with %d, want 404", st)
	}
}
