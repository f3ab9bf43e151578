package config

import (
	"fmt"
	"maps"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/airouter/airouter/redact"
)

// redacted replaces a secret in the views of a Config.
const redacted = "[redacted]"

// Redacted returns a deep copy with every secret replaced by "[redacted]":
// the master key, client keys, credentials' API keys and the user info of
// URLs.
func (cfg *Config) Redacted() *Config {
	r := *cfg
	if r.Server.MasterKey != "" {
		r.Server.MasterKey = redacted
	}
	r.Server.APIKeys = make([]string, len(cfg.Server.APIKeys))
	for i := range r.Server.APIKeys {
		r.Server.APIKeys[i] = redacted
	}
	if len(r.Server.APIKeys) == 0 {
		r.Server.APIKeys = nil
	}
	r.Credentials = slices.Clone(cfg.Credentials)
	for i := range r.Credentials {
		if r.Credentials[i].APIKey != "" {
			r.Credentials[i].APIKey = redacted
		}
		r.Credentials[i].BaseURL = redact.URLs(r.Credentials[i].BaseURL)
	}
	r.Events.NATSURL = redact.URLs(r.Events.NATSURL)
	r.Models = slices.Clone(cfg.Models)
	r.ModelAlias = maps.Clone(cfg.ModelAlias)
	r.Fail2Ban.ErrorCodes = slices.Clone(cfg.Fail2Ban.ErrorCodes)
	r.Fail2Ban.ErrorCodeRules = slices.Clone(cfg.Fail2Ban.ErrorCodeRules)
	if cfg.Fail2Ban.CredentialOverrides != nil {
		r.Fail2Ban.CredentialOverrides = map[string]CredentialOverride{}
		for k, o := range cfg.Fail2Ban.CredentialOverrides {
			r.Fail2Ban.CredentialOverrides[k] = CredentialOverride{
				ErrorCodes:     slices.Clone(o.ErrorCodes),
				ErrorCodeRules: slices.Clone(o.ErrorCodeRules),
			}
		}
	}
	if cfg.OTel.Headers != nil {
		r.OTel.Headers = make(map[string]string, len(cfg.OTel.Headers))
		for k := range cfg.OTel.Headers {
			r.OTel.Headers[k] = redacted
		}
	}
	r.Warnings = slices.Clone(cfg.Warnings)
	return &r
}

// String renders the effective configuration, every default included and
// secrets redacted, as YAML in the file's shape.
func (cfg *Config) String() string {
	out, err := yaml.Marshal(cfg.Redacted())
	if err != nil {
		return fmt.Sprintf("config: rendering failed: %v", err)
	}
	return string(out)
}
