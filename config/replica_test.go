package config

import (
	"os"
	"strings"
	"testing"
)

// Without events.replica_id a router is <host name>:<server.port>, so two
// replicas on one machine differ by port; a configured id is used as given.
func TestReplicaNameDefaultsToHostAndPort(t *testing.T) {
	base := "server:\n  master_key: sk-master-0123456789\n  port: 9091\ncredentials:\n  - name: a\n    type: openai\n" +
		"    api_key: sk-a-0123456789\n    base_url: http://a.example\n"
	cfg, err := Parse([]byte(base), nil)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if got := cfg.ReplicaName(); !strings.HasSuffix(got, ":9091") || (host != "" && len(host) < 50 && got != host+":9091") {
		t.Errorf("default replica name %q, want %q", got, host+":9091")
	}
	cfg, err = Parse([]byte(base+"events:\n  replica_id: router-a.internal:8080\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ReplicaName(); got != "router-a.internal:8080" {
		t.Errorf("replica name %q, want the configured one", got)
	}
	_, err = Parse([]byte(base+"events:\n  replica_id: "+strings.Repeat("x", MaxReplicaIDLen+1)+"\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "events.replica_id") {
		t.Errorf("a %d-character id: %v", MaxReplicaIDLen+1, err)
	}
}
