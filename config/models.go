package config

import (
	"fmt"
	"sort"

	"github.com/airouter/airouter/domain"
)

// Model maps a public model id to what one credential, or every
// credential, serves for it.
type Model struct {
	// Name is the public id clients ask for.
	Name string `yaml:"name"`
	// Model is the name sent upstream (proxy credentials are sent Name).
	Model string `yaml:"model"`
	// Credential limits the entry to one credential; empty applies it to
	// every credential.
	Credential string `yaml:"credential,omitempty"`
	// RPM and TPM limit the credential+model pair; -1 is unlimited.
	RPM int `yaml:"rpm"`
	TPM int `yaml:"tpm"`
	// Weight overrides the credential's weight for this model; 0 inherits.
	Weight int `yaml:"weight"`
}

// placed is a model with the path it was written at, for messages.
type placed struct {
	path  string
	model Model
}

func buildModel(c *checker, path string, f fileModel) Model {
	m := Model{Name: f.Name, Model: f.Model, Credential: f.Credential}
	if c.required(path+".name", f.Name) && f.Name == "*" {
		c.add(path+".name", `"*" is reserved for bans that cover every model`)
	}
	if m.Model == "" {
		m.Model = m.Name
	}
	m.RPM = limit(c, path+".rpm", f.RPM, true)
	m.TPM = limit(c, path+".tpm", f.TPM, true)
	m.Weight = weight(c, path+".weight", f.Weight, 0)
	return m
}

// buildModels checks models[], appends those listed inside credentials,
// and checks that each names a known credential and that no public id is
// defined twice for the same credential (or twice for every credential).
func buildModels(c *checker, fs []fileModel, nested []placed, creds []Credential) []Model {
	var all []placed
	for i, f := range fs {
		p := indexPath("models", i)
		all = append(all, placed{path: p, model: buildModel(c, p, f)})
	}
	all = append(all, nested...)

	types := map[string]domain.CredentialType{}
	for _, cr := range creds {
		types[cr.Name] = cr.Type
	}
	type key struct{ name, credential string }
	first := map[key]string{}
	var out []Model
	for _, pm := range all {
		m, p := pm.model, pm.path
		if m.Credential != "" {
			t, ok := types[m.Credential]
			if !ok {
				c.add(p+".credential", "%s is not a configured credential", c.show(p+".credential", m.Credential))
			}
			if t == domain.CredentialProxy && m.Model != m.Name {
				c.warn(p+".model", "ignored: proxy credential %q is sent the public name %q", m.Credential, m.Name)
			}
		}
		if m.Name == "" {
			continue
		}
		k := key{m.Name, m.Credential}
		if prev, dup := first[k]; dup {
			scope := "every credential"
			if m.Credential != "" {
				scope = fmt.Sprintf("credential %q", m.Credential)
			}
			c.add(p+".name", "%q for %s is already defined at %s", m.Name, scope, prev)
			continue
		}
		first[k] = p
		out = append(out, m)
	}
	return out
}

// buildAliases checks model_alias. An alias to itself is ignored with a
// warning; aliases are resolved once, not in chains.
func buildAliases(c *checker, aliases map[string]string) map[string]string {
	keys := make([]string, 0, len(aliases))
	for k := range aliases {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := map[string]string{}
	for _, k := range keys {
		p := keyPath("model_alias", k)
		switch v := aliases[k]; {
		case k == "":
			c.add("model_alias", "an alias must not be empty")
		case !c.required(p, v):
		case v == k:
			c.warn(p, "ignored: %q is an alias of itself", k)
		default:
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ResolveAlias returns the model an alias stands for, or model itself.
func (cfg *Config) ResolveAlias(model string) string {
	if real, ok := cfg.ModelAlias[model]; ok {
		return real
	}
	return model
}
