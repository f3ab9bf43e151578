package config

import (
	"os"
	"strconv"
	"strings"
)

// MaxReplicaIDLen bounds events.replica_id: it is written on every
// outcome a replica records.
const MaxReplicaIDLen = 64

// replicaID checks events.replica_id: up to MaxReplicaIDLen letters,
// digits and . _ - : @, so it reads the same in JSON, subjects and logs;
// "" (not given) is the default, ReplicaName's.
func replicaID(c *checker, path, s string) string {
	s = strings.TrimSpace(s)
	if !c.given(path, s) {
		return ""
	}
	if len(s) > MaxReplicaIDLen || strings.IndexFunc(s, notReplicaRune) >= 0 {
		c.add(path, "%s must be 1..%d letters, digits and . _ - : @", c.show(path, s), MaxReplicaIDLen)
		return ""
	}
	return s
}

func notReplicaRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	}
	return !strings.ContainsRune("._-:@", r)
}

// ReplicaName is the router's replica id: events.replica_id, or by default
// <host name>:<server.port>, so replicas on one machine differ too.
func (c *Config) ReplicaName() string {
	if c.Events.ReplicaID != "" {
		return c.Events.ReplicaID
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "airouter"
	}
	if len(host) > MaxReplicaIDLen-6 {
		host = host[:MaxReplicaIDLen-6]
	}
	return strings.Map(func(r rune) rune {
		if notReplicaRune(r) {
			return '-'
		}
		return r
	}, host) + ":" + strconv.Itoa(c.Server.Port)
}
