package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"sync"
	"syscall"

	"github.com/airouter/airouter/adminapi"
	"github.com/airouter/airouter/apierror"
	"github.com/airouter/airouter/config"
)

// reloader re-reads the config file serve was given (-config) on SIGHUP
// and on POST /api/reload, and applies what can change live: the proxy's
// credentials, routes, aliases, limits, weights, client keys and panic
// routing (proxy.Reload), the admin API's credentials, configured pairs,
// master key and default failover settings (adminapi.API.Reload), and the
// ban policy, announced on the log (announcePolicy). An invalid file
// changes nothing. What only a restart changes (restartOnly) keeps its
// running value and is named in the answer and the log; the rest of the
// file still applies.
type reloader struct {
	rt    *router
	count *adminapi.Reloads
	// mu serialises reloads; path and cur are read and written under it.
	mu   sync.Mutex
	path string // "" until serve names the file
	cur  *config.Config
}

func (rt *router) newReloader() (*reloader, error) {
	c, err := rt.admin.NewReloads()
	if err != nil {
		return nil, err
	}
	return &reloader{rt: rt, count: c, cur: rt.cfg}, nil
}

// notifyHangup catches SIGHUP from before the router starts, so that one
// sent while it replays the log does not end the process: it is applied
// once the router has started (watch).
func notifyHangup() (hup chan os.Signal, stop func()) {
	hup = make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup, func() { signal.Stop(hup) }
}

// watch makes path the file reloads read and reloads it on every signal
// on hup until ctx ends.
func (rl *reloader) watch(ctx context.Context, path string, hup <-chan os.Signal) {
	rl.mu.Lock()
	rl.path = path
	rl.mu.Unlock()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_, _ = rl.reload(ctx, "SIGHUP")
			}
		}
	}()
}

// reloadAnswer is the body of a reload that applied: what changed (by
// name and config path; never a key) and what needs a restart.
type reloadAnswer struct {
	Result      string         `json:"result"` // "ok"
	Credentials credentialDiff `json:"credentials"`
	// Changed are the other settings that changed and now apply.
	Changed []string `json:"changed"`
	// NeedsRestart are the settings that changed in the file but keep
	// their running values until a restart.
	NeedsRestart []string `json:"needs_restart"`
	// PolicyFingerprint is this replica's own ban policy after the
	// reload; PolicyError says why announcing it on the log failed.
	PolicyFingerprint string `json:"policy_fingerprint"`
	PolicyError       string `json:"policy_error,omitempty"`
}

type credentialDiff struct {
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Changed []string `json:"changed"`
}

// reloadProblem is one problem of a refused file, as config reports it.
type reloadProblem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// reloadRefusal is the body of a refused reload: the OpenAI-shape error
// and every problem found, as at start.
type reloadRefusal struct {
	Error    apierror.OpenAI `json:"error"`
	Problems []reloadProblem `json:"problems"`
}

// serveHTTP answers POST /api/reload: 200 with what changed, or 400 with
// every problem of the file, the running config unchanged.
func (rl *reloader) serveHTTP(ctx context.Context) (int, any) {
	ans, err := rl.reload(ctx, "POST /api/reload")
	if err != nil {
		return http.StatusBadRequest, refusal(err)
	}
	return http.StatusOK, ans
}

func refusal(err error) reloadRefusal {
	r := reloadRefusal{
		Error:    apierror.NewOpenAI(http.StatusBadRequest, "config reload refused; the running config is unchanged: "+err.Error(), "invalid_config"),
		Problems: []reloadProblem{},
	}
	var ce *config.Error
	if errors.As(err, &ce) {
		for _, p := range ce.Problems[:min(len(ce.Problems), config.MaxShownProblems)] {
			r.Problems = append(r.Problems, reloadProblem{Path: p.Path, Message: p.Message})
		}
	} else {
		r.Problems = append(r.Problems, reloadProblem{Message: err.Error()})
	}
	return r
}

// reload reads the file and applies it, or changes nothing and returns
// why. source names what asked (the log says it).
func (rl *reloader) reload(ctx context.Context, source string) (*reloadAnswer, error) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	log := rl.rt.logger.With("source", source)
	ans, err := rl.apply(ctx)
	rl.count.Count(err == nil)
	if err != nil {
		log.Error("config reload refused; the running config is unchanged", "error", err.Error())
		return nil, err
	}
	log.Info("config reloaded", "credentials_added", ans.Credentials.Added,
		"credentials_removed", ans.Credentials.Removed, "credentials_changed", ans.Credentials.Changed,
		"changed", ans.Changed, "policy_fingerprint", ans.PolicyFingerprint)
	if len(ans.NeedsRestart) > 0 {
		log.Warn("config reload: these settings changed in the file but keep their running values until a restart",
			"needs_restart", ans.NeedsRestart)
	}
	if ans.PolicyError != "" {
		log.Warn("config reload: announcing the ban policy failed; the cluster decides under the policy in force",
			"error", ans.PolicyError)
	}
	return ans, nil
}

// apply is reload under mu.
func (rl *reloader) apply(ctx context.Context) (*reloadAnswer, error) {
	if rl.path == "" {
		return nil, errors.New("this router was not started from a config file (serve -config)")
	}
	cfg, err := config.Load(rl.path)
	if err != nil {
		return nil, err
	}
	rt := rl.rt
	ad := adminDeps(cfg, rt.logger)
	ad.Watched = rt.watched
	old := adminDeps(rl.cur, rt.logger)
	old.Watched = rt.watched
	if err := rt.admin.Reload(ad); err != nil {
		return nil, err
	}
	if err := rt.proxy.Reload(ctx, rt.proxyDeps(cfg, rt.admin.Settings, rt.admin.Metrics())); err != nil {
		_ = rt.admin.Reload(old) // the one it replaced, which it accepted
		return nil, err
	}
	for _, w := range cfg.Warnings {
		rt.logger.Warn("config: " + w)
	}
	ans := &reloadAnswer{
		Result:       "ok",
		Credentials:  diffCredentials(rl.cur, cfg),
		Changed:      changedLive(rl.cur, cfg),
		NeedsRestart: changedRestartOnly(rt.cfg, cfg),
	}
	if err := rt.announcePolicy(ctx, cfg.BanPolicy()); err != nil {
		ans.PolicyError = err.Error()
	}
	ans.PolicyFingerprint = rt.ownFingerprint()
	rl.cur = cfg
	return ans, nil
}

// diffCredentials names the credentials added, removed and changed (any
// field, its key included; the answer never shows a key).
func diffCredentials(old, cfg *config.Config) credentialDiff {
	d := credentialDiff{Added: []string{}, Removed: []string{}, Changed: []string{}}
	was := make(map[string]config.Credential, len(old.Credentials))
	for _, c := range old.Credentials {
		was[c.Name] = c
	}
	for _, c := range cfg.Credentials {
		o, ok := was[c.Name]
		switch {
		case !ok:
			d.Added = append(d.Added, c.Name)
		case !reflect.DeepEqual(o, c):
			d.Changed = append(d.Changed, c.Name)
		}
		delete(was, c.Name)
	}
	for _, c := range old.Credentials {
		if _, gone := was[c.Name]; gone {
			d.Removed = append(d.Removed, c.Name)
		}
	}
	return d
}

// setting is one config path and how to read its value.
type setting struct {
	path string
	get  func(*config.Config) any
}

// liveSettings change on reload (credentials are diffed by name apart).
var liveSettings = []setting{
	{"server.master_key", func(c *config.Config) any { return c.Server.MasterKey }},
	{"server.api_keys", func(c *config.Config) any { return c.Server.APIKeys }},
	{"server.default_models_rpm", func(c *config.Config) any { return c.Server.DefaultModelsRPM }},
	{"models", func(c *config.Config) any { return c.Models }},
	{"model_alias", func(c *config.Config) any { return c.ModelAlias }},
	{"fail2ban", func(c *config.Config) any { return c.Fail2Ban }},
	{"model_bench", func(c *config.Config) any { return c.ModelBench }},
	{"cooldown", func(c *config.Config) any { return c.Cooldown }},
	{"fallback", func(c *config.Config) any { return c.Fallback }},
}

// restartOnly are the settings read once at start: the listener and the
// HTTP server, the body limit and timeouts the proxy and the admin API are
// built with, logging, the collector's heap floor, metrics and tracing, and the whole events section
// (the log, its store and the replica's identity).
var restartOnly = []setting{
	{"server.port", func(c *config.Config) any { return c.Server.Port }},
	{"server.max_body_size_mb", func(c *config.Config) any { return c.Server.MaxBodySizeMB }},
	{"server.request_timeout", func(c *config.Config) any { return c.Server.RequestTimeout }},
	{"server.read_header_timeout", func(c *config.Config) any { return c.Server.ReadHeaderTimeout }},
	{"server.write_timeout", func(c *config.Config) any { return c.Server.WriteTimeout }},
	{"server.idle_timeout", func(c *config.Config) any { return c.Server.IdleTimeout }},
	{"server.shutdown_delay", func(c *config.Config) any { return c.Server.ShutdownDelay }},
	{"server.logging_level", func(c *config.Config) any { return c.Server.LoggingLevel }},
	{"server.logging_format", func(c *config.Config) any { return c.Server.LoggingFormat }},
	{"server.heap_floor_mb", func(c *config.Config) any { return c.Server.HeapFloorMB }},
	{"monitoring", func(c *config.Config) any { return c.Monitoring }},
	{"otel", func(c *config.Config) any { return c.OTel }},
	{"events.store_dir", func(c *config.Config) any { return c.Events.StoreDir }},
	{"events.storage", func(c *config.Config) any { return c.Events.Storage }},
	{"events.nats_url", func(c *config.Config) any { return c.Events.NATSURL }},
	{"events.listen", func(c *config.Config) any { return c.Events.Listen }},
	{"events.max_age", func(c *config.Config) any { return c.Events.MaxAge }},
	{"events.max_bytes", func(c *config.Config) any { return c.Events.MaxBytes }},
	{"events.replicas", func(c *config.Config) any { return c.Events.Replicas }},
	{"events.creds_file", func(c *config.Config) any { return c.Events.CredsFile }},
	{"events.replica_id", func(c *config.Config) any { return c.Events.ReplicaID }},
	{"events.server_process", func(c *config.Config) any { return c.Events.ServerProcess }},
}

func changedLive(old, cfg *config.Config) []string { return changed(liveSettings, old, cfg) }

// changedRestartOnly compares with the config the router started with:
// a setting changed and reloaded twice still needs the restart.
func changedRestartOnly(started, cfg *config.Config) []string {
	return changed(restartOnly, started, cfg)
}

func changed(set []setting, old, cfg *config.Config) []string {
	out := []string{}
	for _, s := range set {
		if !reflect.DeepEqual(s.get(old), s.get(cfg)) {
			out = append(out, s.path)
		}
	}
	return slices.Clip(out)
}
