package proxy

import (
	"context"
	"crypto/sha256"
	"slices"
)

// conf is the part of the proxy a config reload replaces: the
// credentials, routes, aliases, client keys, the masked secrets, panic
// routing and the watched codes. It is immutable once built; each routing
// table carries the conf it was built from, and a request loads the table
// once, so it keeps the credentials, keys and routes it started with
// through a reload (a stream running through one completes on its
// credential), while new requests see only the new conf (a removed
// credential gets none).
type conf struct {
	creds   []*credState
	byName  map[string]*credState
	routes  []Route
	aliases map[string]string
	// keys are the digests of the master key (keys[0]) and the client
	// keys.
	keys [][sha256.Size]byte
	// secrets are the credentials' keys, masked in what the proxy relays.
	secrets *secrets
	// panic is fallback.panic (Deps.Panic).
	panic   bool
	watched func(string, int) bool
}

// newConf builds the reloadable part from d, which validate accepted.
// A credential's rate windows are kept by name across reloads (credUsage),
// so a reload neither resets nor doubles what a credential has spent.
func (p *Proxy) newConf(d Deps) (*conf, error) {
	c := &conf{
		byName:  make(map[string]*credState, len(d.Credentials)),
		routes:  slices.Clone(d.Routes),
		aliases: make(map[string]string, len(d.Aliases)),
		panic:   d.Panic,
		watched: d.Watched,
	}
	if c.watched == nil {
		c.watched = func(string, int) bool { return false }
	}
	for alias, real := range d.Aliases {
		if alias == real {
			p.log.Warn("model alias points to itself; ignored", "alias", alias)
			continue
		}
		c.aliases[alias] = real
	}
	c.keys = append(c.keys, sha256.Sum256([]byte(d.MasterKey)))
	for _, k := range d.ClientKeys {
		if k != "" {
			c.keys = append(c.keys, sha256.Sum256([]byte(k)))
		}
	}
	credKeys := make([]string, 0, len(d.Credentials))
	for _, cr := range d.Credentials {
		credKeys = append(credKeys, cr.APIKey)
	}
	c.secrets = newSecrets(credKeys...)
	for i, cr := range d.Credentials {
		cs, err := newCredState(i, cr, p.credUsage(cr.Name))
		if err != nil {
			return nil, err
		}
		c.creds = append(c.creds, cs)
		c.byName[cr.Name] = cs
	}
	return c, nil
}

// credUsage returns the rate windows of a credential by name, created
// once and kept across reloads.
func (p *Proxy) credUsage(name string) *usage {
	v, _ := p.credUse.LoadOrStore(name, &usage{})
	return v.(*usage)
}

// Reload replaces the credentials, routes, aliases, client keys, the
// limits and weights, panic routing and the watched codes with those of
// d, checked as New checks them: an invalid d changes nothing. The other
// fields of d (body limits, timeouts, the transport, the metrics, the
// clock) keep the values New was given. Models learned from proxy
// credentials are kept for the credentials d still has with the same
// type and base URL; the others are learned again.
func (p *Proxy) Reload(ctx context.Context, d Deps) error {
	if err := validate(d); err != nil {
		return err
	}
	c, err := p.newConf(d)
	if err != nil {
		return err
	}
	p.mu.Lock()
	old := p.current()
	for name := range p.learned {
		was, now := old.byName[name], c.byName[name]
		if now == nil || !now.proxy || was == nil || was.base != now.base {
			delete(p.learned, name)
		}
	}
	p.rebuildLocked(c)
	p.mu.Unlock()
	if hasProxyCredentials(c) {
		_ = p.RefreshModels(ctx) // failures are logged; unlearned credentials serve any model
		p.startRefresh()
	}
	return nil
}

// current is the conf in force.
func (p *Proxy) current() *conf { return p.table.Load().conf }
