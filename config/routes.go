package config

import (
	"sort"

	"github.com/airouter/airouter/domain"
)

// Target is one credential that serves a public model, with the values
// routing needs for the pair.
type Target struct {
	Credential string                `yaml:"credential"`
	Type       domain.CredentialType `yaml:"type"`
	// UpstreamModel is the model name sent upstream: the entry's model,
	// or the public name for a proxy credential.
	UpstreamModel string `yaml:"upstream_model"`
	// Weight is the pair's effective weight: the model's, else the
	// credential's.
	Weight int `yaml:"weight"`
	// RPM and TPM limit the pair; -1 is unlimited. The credential's own
	// limits are in its Credential.
	RPM        int  `yaml:"rpm"`
	TPM        int  `yaml:"tpm"`
	IsFallback bool `yaml:"is_fallback"`
}

// Route is a public model and the credentials that serve it, in
// credential order.
type Route struct {
	Model   string   `yaml:"model"`
	Targets []Target `yaml:"targets"`
}

// FiltersModels reports whether models are configured. Then a credential
// serves only the models mapped to it (an entry without a credential maps
// to every credential); otherwise every credential serves every model.
// Proxy credentials also serve the models they learn at runtime, which the
// config cannot know.
func (cfg *Config) FiltersModels() bool { return len(cfg.Models) > 0 }

// Routes returns the static route table, sorted by public model id. It is
// empty when no models are configured (see FiltersModels and Targets).
func (cfg *Config) Routes() []Route {
	seen := map[string]bool{}
	var names []string
	for _, m := range cfg.Models {
		if !seen[m.Name] {
			seen[m.Name] = true
			names = append(names, m.Name)
		}
	}
	sort.Strings(names)
	routes := make([]Route, 0, len(names))
	for _, n := range names {
		if ts := cfg.Targets(n); len(ts) > 0 {
			routes = append(routes, Route{Model: n, Targets: ts})
		}
	}
	return routes
}

// Targets returns the credentials that serve a public model by config: with
// no models configured every credential serves it under its own name, at
// server.default_models_rpm;
// otherwise the entry for the model and credential applies, else the
// entry for the model without a credential, else the credential does not
// serve it. It scans the config; callers build their tables once.
func (cfg *Config) Targets(model string) []Target {
	var out []Target
	for _, cr := range cfg.Credentials {
		t := Target{
			Credential: cr.Name, Type: cr.Type, UpstreamModel: model, Weight: cr.Weight,
			RPM: cfg.Server.DefaultModelsRPM, TPM: -1, IsFallback: cr.IsFallback,
		}
		if cfg.FiltersModels() {
			m, ok := cfg.entry(model, cr.Name)
			if !ok {
				continue
			}
			t.RPM, t.TPM = m.RPM, m.TPM
			if m.Weight > 0 {
				t.Weight = m.Weight
			}
			if cr.Type != domain.CredentialProxy {
				t.UpstreamModel = m.Model
			}
		}
		out = append(out, t)
	}
	return out
}

// entry finds the models entry for a model on a credential: the one bound
// to the credential, else the one for every credential.
func (cfg *Config) entry(model, credential string) (Model, bool) {
	var generic Model
	found := false
	for _, m := range cfg.Models {
		if m.Name != model {
			continue
		}
		if m.Credential == credential {
			return m, true
		}
		if m.Credential == "" {
			generic, found = m, true
		}
	}
	return generic, found
}
