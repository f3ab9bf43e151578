package config

import (
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/transport/eventlog/streamspec"
)

// Defaults of the sections airouter adds.
const (
	DefaultStoreDir   = "./data"
	DefaultMaxAge     = 168 * time.Hour
	DefaultMaxBytes   = streamspec.DefaultMaxBytes
	DefaultMaxHops    = 20
	DefaultTimeBudget = 45 * time.Second
	DefaultBenchFails = 3
	DefaultBenchWin   = 15 * time.Minute
	DefaultBenchFor   = 10 * time.Minute
)

// Events is where the event log lives.
type Events struct {
	// StoreDir holds the embedded server's file storage.
	StoreDir string `yaml:"store_dir"`
	// Storage is one of streamspec.StorageKinds (file or memory).
	Storage string `yaml:"storage"`
	// NATSURL is empty for the embedded server, or a comma-separated list
	// of external NATS server URLs.
	NATSURL string `yaml:"nats_url,omitempty"`
	// Listen is empty when only this process uses the embedded server;
	// host:port makes it accept NATS clients there too.
	Listen string `yaml:"listen,omitempty"`
	// MaxAge is how long events are kept; 0 keeps them until MaxBytes.
	MaxAge time.Duration `yaml:"max_age"`
	// MaxBytes caps the stream; the oldest events go first. -1 is
	// unlimited.
	MaxBytes int64 `yaml:"max_bytes"`
	// Replicas of the stream, streamspec.MinReplicas..MaxReplicas (1..5);
	// more than 1 needs an external cluster.
	Replicas int `yaml:"replicas"`
	// CredsFile is a NATS credentials file (user JWT and NKey seed) for an
	// external cluster that requires one; empty for none.
	CredsFile string `yaml:"creds_file,omitempty"`
	// ReplicaID names this router on the log (its outcomes, heartbeats and
	// probe claims); empty is the default, ReplicaName's <host name>:<port>.
	ReplicaID string `yaml:"replica_id,omitempty"`
	// ServerProcess runs the embedded server of a file store in a child
	// process of the router (the same binary started again) instead of in
	// the router's own process: default true. The kernel then schedules
	// the server's work apart from requests, and the router's heap holds
	// the router alone.
	ServerProcess bool `yaml:"server_process"`
}

// Embedded reports whether the router runs its own nats-server.
func (e Events) Embedded() bool { return e.NATSURL == "" }

// NATSURLs returns the external servers' URLs (nil when embedded).
func (e Events) NATSURLs() []string {
	if e.NATSURL == "" {
		return nil
	}
	return strings.Split(e.NATSURL, ",")
}

// Fallback are the failover settings (changeable at runtime, see
// domain.FallbackSettings).
type Fallback struct {
	// MaxHops is the most upstream attempts for one request; 1 is exactly
	// one attempt.
	MaxHops int `yaml:"max_hops"`
	// TimeBudget is the wall-clock budget of one request's attempts; 0 is
	// none.
	TimeBudget time.Duration `yaml:"time_budget"`
	// ExposeDetailHeaders adds the X-Fallback-Detail header to answers.
	ExposeDetailHeaders bool `yaml:"expose_detail_headers"`
	// Panic turns on panic routing: when every candidate of a model is
	// held back by automatic bans, cooldowns or the bench, a request
	// tries them anyway (least recently failed first) instead of
	// answering 429. Config only: not one of the runtime settings.
	Panic bool `yaml:"panic"`
}

// Settings returns the failover settings as the domain value.
func (f Fallback) Settings() domain.FallbackSettings {
	return domain.FallbackSettings{
		MaxHops:             f.MaxHops,
		TimeBudget:          domain.Duration(f.TimeBudget),
		ExposeDetailHeaders: f.ExposeDetailHeaders,
	}
}

// ModelBench takes a model out of rotation on every credential after
// Failures failures within Window (from at least two credentials), for
// Duration. Failures 0 turns benching off.
type ModelBench struct {
	Failures int           `yaml:"failures"`
	Window   time.Duration `yaml:"window"`
	Duration time.Duration `yaml:"duration"`
}

// Monitoring is the monitoring section. PrometheusEnabled is read and
// checked, and defaults to true whether or not the section is present;
// the wiring does not read it, so /metrics is served either way.
// PprofListen is the host:port where the Go runtime's profiles and
// execution traces (/debug/pprof/) are served, "" when they are not.
type Monitoring struct {
	PrometheusEnabled bool   `yaml:"prometheus_enabled"`
	PprofListen       string `yaml:"pprof_listen,omitempty"`
}

func buildEvents(c *checker, f fileEvents) Events {
	const p = "events."
	e := Events{StoreDir: f.StoreDir}
	if !c.given(p+"store_dir", e.StoreDir) {
		e.StoreDir = DefaultStoreDir
	}
	e.Storage = oneOf(c, p+"storage", f.Storage, streamspec.StorageKinds()...)
	e.NATSURL = natsURLs(c, p+"nats_url", f.NATSURL)
	if e.Listen = c.hostPort(p+"listen", f.Listen); e.Listen != "" && e.NATSURL != "" {
		c.add(p+"listen", "only the embedded server listens; it is not used with events.nats_url")
	}
	e.MaxAge = c.duration(p+"max_age", f.MaxAge, DefaultMaxAge)
	if e.MaxBytes = c.size(p+"max_bytes", f.MaxBytes, DefaultMaxBytes); e.MaxBytes == 0 {
		c.add(p+"max_bytes", "0 is invalid; use -1 for unlimited or a positive size")
	}
	if e.CredsFile = strings.TrimSpace(f.CredsFile); c.given(p+"creds_file", e.CredsFile) {
		switch st, err := os.Stat(e.CredsFile); {
		case strings.TrimSpace(f.NATSURL) == "":
			c.add(p+"creds_file", "is only used with events.nats_url; the embedded server needs no credentials")
		case err != nil:
			c.add(p+"creds_file", "%q cannot be read: %v", e.CredsFile, errors.Unwrap(err))
		case st.IsDir():
			c.add(p+"creds_file", "%q is a directory, not a NATS credentials file", e.CredsFile)
		}
	}
	e.ReplicaID = replicaID(c, p+"replica_id", f.ReplicaID)
	e.ServerProcess = c.boolean(p+"server_process", f.ServerProcess, true)
	if c.given(p+"server_process", f.ServerProcess) && e.ServerProcess {
		switch {
		case e.NATSURL != "":
			c.add(p+"server_process", "only the embedded server runs in a process; it is not used with events.nats_url")
		case e.Storage == streamspec.StorageMemory:
			c.add(p+"server_process", "only a file store's server runs in its own process; memory storage stays in the router's")
		}
	}
	var ok bool
	if e.Replicas, ok = c.integer(p+"replicas", f.Replicas, 1); ok {
		switch {
		case !streamspec.ValidReplicas(e.Replicas):
			c.add(p+"replicas", "%d is out of range %d..%d", e.Replicas, streamspec.MinReplicas, streamspec.MaxReplicas)
		case e.Replicas > 1 && e.NATSURL == "":
			c.add(p+"replicas", "%d needs an external NATS cluster (events.nats_url); the embedded server has one replica", e.Replicas)
		}
	}
	return e
}

// natsURLs checks a comma-separated list of NATS server URLs
// (nats://, tls://, ws://, wss:// or a bare host:port) and normalizes it.
func natsURLs(c *checker, path, s string) string {
	if !c.given(path, s) {
		return ""
	}
	var out []string
	for _, part := range strings.Split(s, ",") {
		u := strings.TrimSpace(part)
		if u == "" {
			c.add(path, "%s has an empty entry", c.show(path, s))
			continue
		}
		if !strings.Contains(u, "://") {
			if _, _, err := net.SplitHostPort(u); err != nil {
				c.add(path, "%s is not a NATS URL or host:port", c.show(path, u))
				continue
			}
		} else if pu, err := url.Parse(u); err != nil || pu.Host == "" ||
			(pu.Scheme != "nats" && pu.Scheme != "tls" && pu.Scheme != "ws" && pu.Scheme != "wss") {
			c.add(path, "%s is not a nats://, tls://, ws:// or wss:// URL with a host", c.show(path, u))
			continue
		}
		out = append(out, u)
	}
	return strings.Join(out, ",")
}

func buildFallback(c *checker, f fileFallback) Fallback {
	const p = "fallback."
	var fb Fallback
	var ok bool
	if fb.MaxHops, ok = c.integer(p+"max_hops", f.MaxHops, DefaultMaxHops); ok && fb.MaxHops < 1 {
		c.add(p+"max_hops", "%d must be >= 1 (1 is exactly one attempt)", fb.MaxHops)
	}
	fb.TimeBudget = c.duration(p+"time_budget", f.TimeBudget, DefaultTimeBudget)
	fb.ExposeDetailHeaders = c.boolean(p+"expose_detail_headers", f.ExposeDetailHeaders, false)
	fb.Panic = c.boolean(p+"panic", f.Panic, false)
	return fb
}

func buildModelBench(c *checker, f fileModelBench) ModelBench {
	const p = "model_bench."
	var b ModelBench
	var ok bool
	if b.Failures, ok = c.integer(p+"failures", f.Failures, DefaultBenchFails); ok && b.Failures < 0 {
		c.add(p+"failures", "%d is negative (0 turns benching off)", b.Failures)
	}
	b.Window = c.duration(p+"window", f.Window, DefaultBenchWin)
	b.Duration = c.duration(p+"duration", f.Duration, DefaultBenchFor)
	if b.Failures > 0 {
		if b.Window == 0 {
			c.add(p+"window", "0 is invalid while benching is on (model_bench.failures > 0)")
		}
		if b.Duration == 0 {
			c.add(p+"duration", "0 is invalid while benching is on (model_bench.failures > 0)")
		}
	}
	return b
}
