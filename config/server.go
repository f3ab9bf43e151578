package config

import (
	"strings"
	"time"
)

// Server defaults.
const (
	DefaultPort           = 8080
	DefaultMaxBodySizeMB  = 100
	DefaultRequestTimeout = 60 * time.Second
	// DefaultReadHeaderTimeout bounds the wait for a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultShutdownDelay     = 5 * time.Second
	// DefaultHeapFloorMB holds the collector until the heap is 16 MiB. With
	// the event log's server in its own process the router's live heap is
	// 2-3 MB, which GOGC's pacing collects at about 5 MB, over 15 times a
	// second at 5,000 req/s; a cycle marks the live heap whatever the
	// floor, so rarer cycles cost less CPU and no longer marks. A live
	// heap past half the floor (a large pool, or the server in the router's
	// process) is paced as before.
	DefaultHeapFloorMB = 16
)

// maxBodySizeMB bounds max_body_size_mb and heap_floor_mb (1 TiB) so the
// byte count cannot overflow.
const maxBodySizeMB = 1 << 20

// Server is the HTTP side of the router.
type Server struct {
	// Port is the HTTP port; the router listens on every interface.
	Port int `yaml:"port"`
	// MasterKey is accepted on every endpoint, including the admin API.
	MasterKey string `yaml:"master_key"`
	// APIKeys may call the proxy endpoints but not the admin API.
	APIKeys []string `yaml:"api_keys,omitempty"`
	// MaxBodySizeMB bounds a client request body, in MiB (see
	// MaxBodyBytes).
	MaxBodySizeMB int `yaml:"max_body_size_mb"`
	// RequestTimeout bounds the read of a client's request body (408),
	// each upstream attempt up to its response headers (and the body of a
	// non-streamed response), and an admin change's wait for its event to
	// be applied; 0 means no bound on the body read or the attempt
	// (written 0 or -1).
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// ReadHeaderTimeout bounds the wait for a client request's headers
	// (http.Server.ReadHeaderTimeout); 0 means none. The body is bounded
	// by RequestTimeout.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// WriteTimeout bounds each write to a client (on the proxied /v1
	// routes it is renewed before every write); 0 means none.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// IdleTimeout bounds a keep-alive client connection's wait for its
	// next request; 0 in the file means twice WriteTimeout.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// ShutdownDelay is how long, after a stop signal, /readyz answers 503
	// while requests are still served, so that a load balancer stops
	// sending new ones before the server stops accepting and lets
	// in-flight ones finish; 0 stops at once.
	ShutdownDelay time.Duration `yaml:"shutdown_delay"`
	// LoggingLevel is info, debug, warn or error.
	LoggingLevel string `yaml:"logging_level"`
	// LoggingFormat is text or json.
	LoggingFormat string `yaml:"logging_format"`
	// DefaultModelsRPM is the rpm of a credential+model pair that no
	// models entry limits; -1 is unlimited.
	DefaultModelsRPM int `yaml:"default_models_rpm"`
	// HeapFloorMB is the heap, in MiB, below which the garbage collector
	// does not start a cycle (package heapfloor; DefaultHeapFloorMB); 0
	// leaves the collector to GOGC's default. It is not applied when GOGC is set in the
	// environment; GOMEMLIMIT still bounds it.
	HeapFloorMB int `yaml:"heap_floor_mb"`
}

// MaxBodyBytes is the largest request body accepted, in bytes.
func (s Server) MaxBodyBytes() int64 { return int64(s.MaxBodySizeMB) << 20 }

func buildServer(c *checker, f fileServer) Server {
	s := Server{
		MasterKey:      f.MasterKey,
		RequestTimeout: DefaultRequestTimeout,
	}
	s.Port, _ = c.integer("server.port", f.Port, DefaultPort)
	if s.Port < 1 || s.Port > 65535 {
		c.add("server.port", "%d is out of range 1..65535", s.Port)
	}
	c.required("server.master_key", f.MasterKey)
	s.APIKeys = clientKeys(c, f.APIKeys, f.MasterKey)

	var ok bool
	if s.MaxBodySizeMB, ok = c.integer("server.max_body_size_mb", f.MaxBodySizeMB, DefaultMaxBodySizeMB); ok &&
		(s.MaxBodySizeMB < 1 || s.MaxBodySizeMB > maxBodySizeMB) {
		c.add("server.max_body_size_mb", "%d is out of range 1..%d", s.MaxBodySizeMB, maxBodySizeMB)
	}
	// -1 also means no timeout.
	if strings.TrimSpace(f.RequestTimeout) == "-1" {
		s.RequestTimeout = 0
	} else {
		s.RequestTimeout = c.duration("server.request_timeout", f.RequestTimeout, DefaultRequestTimeout)
	}
	s.ReadHeaderTimeout = c.duration("server.read_header_timeout", f.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	s.WriteTimeout = c.duration("server.write_timeout", f.WriteTimeout, DefaultWriteTimeout)
	s.IdleTimeout = c.duration("server.idle_timeout", f.IdleTimeout, DefaultIdleTimeout)
	if s.IdleTimeout == 0 {
		s.IdleTimeout = 2 * s.WriteTimeout
	}
	s.ShutdownDelay = c.duration("server.shutdown_delay", f.ShutdownDelay, DefaultShutdownDelay)

	s.LoggingLevel = oneOf(c, "server.logging_level", f.LoggingLevel, "info", "debug", "warn", "error")
	s.LoggingFormat = oneOf(c, "server.logging_format", f.LoggingFormat, "text", "json")

	s.DefaultModelsRPM = limit(c, "server.default_models_rpm", f.DefaultModelsRPM, true)
	if s.HeapFloorMB, ok = c.integer("server.heap_floor_mb", f.HeapFloorMB, DefaultHeapFloorMB); ok &&
		(s.HeapFloorMB < 0 || s.HeapFloorMB > maxBodySizeMB) {
		c.add("server.heap_floor_mb", "%d is out of range 0..%d", s.HeapFloorMB, maxBodySizeMB)
	}
	return s
}

// clientKeys checks server.api_keys: each present, none repeated, none
// equal to the master key (which would hand a client the admin API).
func clientKeys(c *checker, keys []string, master string) []string {
	var out []string
	first := map[string]string{}
	for i, k := range keys {
		p := indexPath("server.api_keys", i)
		if !c.required(p, k) {
			continue
		}
		switch prev, dup := first[k]; {
		case dup:
			c.add(p, "%s duplicates %s", c.show(p, k), prev)
		case k == master:
			c.add(p, "%s equals server.master_key; a client key must differ from it", c.show(p, k))
		default:
			first[k] = p
			out = append(out, k)
		}
	}
	return out
}

// oneOf parses a lowercase choice; the first choice is the default.
func oneOf(c *checker, path, s string, choices ...string) string {
	if !c.given(path, s) {
		return choices[0]
	}
	v := strings.ToLower(strings.TrimSpace(s))
	for _, ch := range choices {
		if v == ch {
			return v
		}
	}
	c.add(path, "%s is not one of %s", c.show(path, s), strings.Join(choices, ", "))
	return choices[0]
}

// limit parses an rpm or tpm: -1 (the default) is unlimited, a positive
// number is the limit, anything below -1 is a problem. zeroUnlimited says
// whether 0 also means unlimited; otherwise 0 is a problem.
func limit(c *checker, path, s string, zeroUnlimited bool) int {
	n, ok := c.integer(path, s, -1)
	switch {
	case !ok:
		return -1
	case n == 0 && zeroUnlimited:
		return -1
	case n == 0:
		c.add(path, "0 is invalid; use -1 for unlimited or a positive limit")
		return -1
	case n < -1:
		c.add(path, "%d is invalid; use -1 for unlimited or a positive limit", n)
		return -1
	}
	return n
}
