package adminapi

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/airouter/airouter/domain"
)

// conf is the part of the API a config reload replaces: the credentials,
// the configured pairs, the watched codes, the default failover settings
// and the master key. It is immutable once built; the API swaps a whole
// new one in (Reload), so a request reads one config or the other, never
// a mix of the two.
type conf struct {
	creds      []Credential
	byName     map[string]Credential
	configured []Pair
	// known are the configured pairs /health and the per-pair gauges
	// show (showable, the first of each key), and knownKeys their keys:
	// built once per config, not per scrape.
	known     []Pair
	knownKeys map[domain.Key]bool
	watched   func(credential string, status int) bool
	defaults  domain.FallbackSettings
	master    [sha256.Size]byte
	// deps are the dependencies the views of the past render with
	// (PastView): New's, with the config's parts of the latest reload.
	deps Deps
}

func newConf(d Deps) *conf {
	c := &conf{
		creds:      append([]Credential(nil), d.Credentials...),
		byName:     make(map[string]Credential, len(d.Credentials)),
		configured: append([]Pair(nil), d.ConfiguredPairs...),
		watched:    d.Watched,
		defaults:   d.DefaultSettings,
		master:     sha256.Sum256([]byte(d.MasterKey)),
		deps:       d,
	}
	for _, cr := range c.creds {
		c.byName[cr.Name] = cr
	}
	c.knownKeys = make(map[domain.Key]bool, len(c.configured))
	for _, p := range c.configured {
		if k := p.Key(); c.showable(k) && !c.knownKeys[k] {
			c.knownKeys[k] = true
			c.known = append(c.known, p)
		}
	}
	return c
}

// showable reports whether /health and the per-pair gauges may show the
// pair: one of a configured credential, naming a model (not "*").
func (c *conf) showable(k domain.Key) bool {
	_, ok := c.byName[k.Credential]
	return ok && k.Model != "" && k.Model != domain.AllModels
}

// cf is the conf in force.
func (a *API) cf() *conf { return a.conf.Load() }

// Reload replaces what config determines (Deps.MasterKey, Credentials,
// ConfiguredPairs, Watched and DefaultSettings) with cfg's, checked as New
// checks them: on an error nothing changes. The rest of the API (its
// snapshot, log, metrics, clock) stays as New built it. Credentials cfg
// no longer has leave /health and /metrics; their bans stay on the log.
// Default settings apply unless an operator set settings on the log,
// which stay in force. Models first configured by a reload are labelled
// in metrics like models clients name (modelLabels), within the same
// bound.
func (a *API) Reload(cfg Deps) error {
	var errs []error
	if cfg.MasterKey == "" {
		errs = append(errs, errors.New("a master key is required"))
	}
	seen := make(map[string]bool, len(cfg.Credentials))
	for i, c := range cfg.Credentials {
		if err := domain.CheckCredentialName(c.Name, seen); err != nil {
			errs = append(errs, fmt.Errorf("credential %d: name %q %w", i, c.Name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("reload the admin API: %w", errors.Join(errs...))
	}
	d := a.cf().deps
	d.MasterKey = cfg.MasterKey
	d.Credentials = cfg.Credentials
	d.ConfiguredPairs = cfg.ConfiguredPairs
	d.Watched = cfg.Watched
	d.DefaultSettings = cfg.DefaultSettings
	a.conf.Store(newConf(d))
	return nil
}
