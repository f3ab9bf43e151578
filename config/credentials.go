package config

import (
	"errors"

	"strings"

	"github.com/airouter/airouter/domain"
)

// Credential is one upstream account or endpoint.
type Credential struct {
	// Name is unique and matches [A-Za-z0-9_-]+: it is used in NATS
	// subjects, metrics and logs.
	Name string                `yaml:"name"`
	Type domain.CredentialType `yaml:"type"`
	// APIKey is sent upstream. It may be empty for a proxy (the client's
	// own Authorization is then forwarded) and for a credential written as
	// type vllm or hosted_vllm (then no Authorization is sent).
	APIKey string `yaml:"api_key,omitempty"`
	// BaseURL is http(s)://host[:port][/path], without a trailing "/v1" or
	// "/": the request path (/v1/...) is appended to it.
	BaseURL string `yaml:"base_url"`
	// RPM and TPM limit the whole credential; -1 is unlimited.
	RPM int `yaml:"rpm"`
	TPM int `yaml:"tpm"`
	// Weight is the credential's selection weight (its share of a
	// model's traffic), >= 1.
	Weight int `yaml:"weight"`
	// IsFallback puts the credential in the fallback pool, used only when
	// no primary credential can serve.
	IsFallback bool `yaml:"is_fallback"`
}

// credentialType maps the written type (lowercased) to the type it means;
// keyOptional is true when the api_key may be omitted.
func credentialType(written string) (t domain.CredentialType, keyOptional, ok bool) {
	switch strings.ToLower(strings.TrimSpace(written)) {
	case "openai":
		return domain.CredentialOpenAI, false, true
	case "vllm", "hosted_vllm", "hosted-vllm":
		return domain.CredentialOpenAI, true, true
	case "anthropic":
		return domain.CredentialAnthropic, false, true
	case "proxy", "air", "aar", "auto_ai_router", "auto-ai-router":
		return domain.CredentialProxy, true, true
	}
	return "", false, false
}

// buildCredentials checks credentials[] and returns them with the models
// listed inside them, which are bound to their credential.
func buildCredentials(c *checker, fs []fileCredential) ([]Credential, []placed) {
	if len(fs) == 0 {
		c.add("credentials", "at least one credential is required")
	}
	var out []Credential
	var models []placed
	first := map[string]string{} // a name's path, for duplicates
	seen := map[string]bool{}
	for i, f := range fs {
		p := indexPath("credentials", i)
		cr := Credential{Name: f.Name, APIKey: f.APIKey}
		if c.required(p+".name", f.Name) {
			switch err := domain.CheckCredentialName(f.Name, seen); {
			case errors.Is(err, domain.ErrCredentialNameTaken):
				c.add(p+".name", "%s duplicates %s", c.show(p+".name", f.Name), first[f.Name])
			case err != nil:
				c.add(p+".name", "%s %v", c.show(p+".name", f.Name), err)
			default:
				first[f.Name] = p + ".name"
			}
		}
		keyOptional := false
		if c.required(p+".type", f.Type) {
			var ok bool
			if cr.Type, keyOptional, ok = credentialType(f.Type); !ok {
				c.add(p+".type", "%s is not openai, anthropic or proxy (or an alias: vllm, hosted_vllm, air, auto_ai_router)",
					c.show(p+".type", f.Type))
			}
		}
		if !keyOptional && cr.Type != "" {
			c.required(p+".api_key", f.APIKey)
		}
		cr.BaseURL = baseURL(c, p+".base_url", f.BaseURL)
		cr.RPM = limit(c, p+".rpm", f.RPM, false)
		cr.TPM = limit(c, p+".tpm", f.TPM, true)
		cr.Weight = weight(c, p+".weight", f.Weight, 1)
		cr.IsFallback = c.boolean(p+".is_fallback", f.IsFallback, false)
		out = append(out, cr)

		for j, fm := range f.Models {
			mp := indexPath(p+".models", j)
			if fm.Credential != "" && fm.Credential != f.Name {
				c.add(mp+".credential", "%s differs from the credential it is listed in (%s)",
					c.show(mp+".credential", fm.Credential), c.show(p+".name", f.Name))
			}
			fm.Credential = f.Name
			models = append(models, placed{path: mp, model: buildModel(c, mp, fm)})
		}
	}
	return out, models
}

// baseURL checks a base_url and trims a trailing "/v1" or "/".
func baseURL(c *checker, path, s string) string {
	if !c.required(path, s) {
		return ""
	}
	clean, err := domain.CleanBaseURL(s)
	if err != nil {
		c.add(path, "%s %v", c.show(path, s), err)
		return ""
	}
	return clean
}

// weight parses a weight: negative is a problem, 0 (or absent) gives def.
func weight(c *checker, path, s string, def int) int {
	n, ok := c.integer(path, s, def)
	switch {
	case !ok:
		return def
	case n < 0:
		c.add(path, "%d is negative", n)
		return def
	case n == 0:
		return def
	}
	return n
}

// Credential returns the credential with that name. It scans the list.
func (cfg *Config) Credential(name string) (Credential, bool) {
	for _, cr := range cfg.Credentials {
		if cr.Name == name {
			return cr, true
		}
	}
	return Credential{}, false
}
