package main

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// server.read_header_timeout reaches the HTTP server: a client that sends
// part of its request head and then nothing has its connection closed
// once the timeout passes. The timeout is net/http's, on the wall clock, so
// the test sets a short one and bounds its own wait well above it.
func TestReadHeaderTimeoutClosesASlowHead(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), "memory", "", newUpstream(t, 200))
	cfg.Server.ReadHeaderTimeout = 100 * time.Millisecond
	r := start(t, cfg)
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: airouter\r\n"); err != nil {
		t.Fatal(err)
	}
	const bound = 5 * time.Second // far below the old fixed 30 s
	_ = conn.SetReadDeadline(time.Now().Add(bound))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("the connection was not closed within %v: %v (read %q)", bound, err, got)
	}
	if strings.Contains(string(got), "200 OK") {
		t.Errorf("a request with an unfinished head was answered: %q", got)
	}
}
