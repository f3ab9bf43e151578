package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// queryRoutes are the GET routes that decode a query string, and whether
// they need the master key.
var queryRoutes = []struct {
	path string
	key  bool
}{
	{"/health", false},
	{"/api/bans", true},
	{"/api/timeline", false},
}

// querySeeds are query strings of the shapes operators send, and near
// misses.
var querySeeds = []string{
	"", "at=10m", "at=1h30m", "at=0001-01-01T00:00:00Z", "at=2999-01-01T00:00:00Z", "at=-5m", "at=1m&at=2m",
	"at=" + time.Now().UTC().Format(time.RFC3339), "at=1e400s", "at=%zz", "at=",
	"credential=cred-a&model=gpt-test&banned=true", "banned=maybe", "credential=nobody&banned=false",
	"model=" + strings.Repeat("m", 300), "credential=cred-a&credential=cred-b",
	"since=5m&until=1m", "since=1m&until=5m", "since=2h&until=1h", "until=garbage", "since=" + strings.Repeat("9", 5000),
	strings.Repeat("k", 5000) + "=1", "bogus=1", "a=1;b=2", "at=10m&credential=cred-a",
}

// FuzzAdminQuery: whatever query string an operator sends to /health,
// /api/bans or /api/timeline (past views included, folded from a real
// router's log), the router answers without a panic and never with a 5xx
// but /health's documented 503 for an unhealthy pool, and an error body
// stays small whatever the query's size.
func FuzzAdminQuery(f *testing.F) {
	for i, s := range querySeeds {
		f.Add(uint8(i), s)
	}
	ups := []*upstream{newUpstream(f, http.StatusOK), newUpstream(f, http.StatusOK)}
	r := startReplica(f, "fuzz", buildConfig(f, fmt.Sprintf("events:\n  store_dir: %s\n  storage: memory\n", f.TempDir()), "", ups...))
	client := &http.Client{Timeout: time.Minute}
	get := func(path, query string, key bool) (int, []byte, error) {
		req, err := http.NewRequest(http.MethodGet, r.url+path, nil)
		if err != nil {
			return 0, nil, err
		}
		req.URL.RawQuery = query
		if key {
			req.Header.Set("Authorization", "Bearer "+testMasterKey)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, body, err
	}
	// Its start put the policy and a heartbeat in the log, for the past
	// views to fold.
	if st, _, err := get("/health", "", false); err != nil || st != http.StatusOK {
		f.Fatalf("the router does not answer /health: %d %v", st, err)
	}
	f.Fuzz(func(t *testing.T, which uint8, query string) {
		if strings.ContainsFunc(query, func(c rune) bool { return c <= ' ' || c == 0x7f || c == '#' }) {
			return // not a query a client can put on a request line
		}
		rt := queryRoutes[int(which)%len(queryRoutes)]
		st, body, err := get(rt.path, query, rt.key)
		if err != nil {
			t.Fatalf("GET %s?%.300s: %v", rt.path, query, err) // a panic in a handler drops the connection
		}
		if st >= 500 && !(rt.path == "/health" && st == http.StatusServiceUnavailable && bytes.Contains(body, []byte(`"status":"unhealthy"`))) {
			t.Fatalf("GET %s?%.300s: status %d: %.500s", rt.path, query, st, body)
		}
		if st >= 400 && len(body) > 2048 {
			t.Fatalf("GET %s?%.300s: status %d with a %d-byte body: %.300s", rt.path, query, st, len(body), body)
		}
	})
}
