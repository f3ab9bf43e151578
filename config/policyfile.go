package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/airouter/airouter/domain"
)

// policySections are the top-level sections of a config file that make
// its ban policy: what ParsePolicy reads and validates, and what
// buildPolicy builds.
var policySections = []string{"fail2ban", "model_bench", "cooldown"}

// buildPolicy builds the policy sections of f into cfg, whose Credentials
// are set: the one place both Parse and ParsePolicy build them, so a
// policy reads alike in the router's config and in a policy file.
func buildPolicy(c *checker, cfg *Config, f fileConfig) {
	cfg.Fail2Ban = buildFail2Ban(c, f.Fail2Ban, cfg.Credentials)
	cfg.ModelBench = buildModelBench(c, f.ModelBench)
	cfg.Cooldown = buildCooldown(c, f.Cooldown)
}

// LoadPolicy reads the ban policy of the config file at path (ParsePolicy),
// resolving os.environ/VAR from the process environment.
func LoadPolicy(path string) (domain.BanPolicy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return domain.BanPolicy{}, fmt.Errorf("read policy: %w", err)
	}
	p, err := ParsePolicy(data, os.LookupEnv)
	if ce := (*Error)(nil); errors.As(err, &ce) {
		ce.File = path
	}
	return p, err
}

// ParsePolicy reads only the ban policy of a config document, for a tool
// that weighs a policy against the log (airouter whatif): its
// policySections, checked key by key and value by value as Parse
// checks them, and turned into the domain value by the same BanPolicy.
// Every other section is ignored, and of credentials only each one's name
// and type are read: credential_overrides must name one of them, and
// proxy credentials are never banned. A document without credentials lets
// credential_overrides name any credential. On failure the error is a
// *Error listing every problem of the policy sections.
func ParsePolicy(data []byte, env func(string) (string, bool)) (domain.BanPolicy, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	fail := func(msg string) (domain.BanPolicy, error) {
		return domain.BanPolicy{}, &Error{Problems: []Problem{{Message: msg}}}
	}
	root, err := document(data)
	if err != nil {
		return fail(err.Error())
	}
	c := newChecker()
	var f fileConfig
	var creds []Credential
	if root != nil {
		x := &expander{active: map[*yaml.Node]bool{}}
		plain, err := x.copy(root, "")
		if err != nil {
			return fail(err.Error())
		}
		if plain.Kind != yaml.MappingNode {
			return fail("the file must be a mapping of sections (fail2ban, model_bench, cooldown, ...)")
		}
		var sections *yaml.Node
		sections, creds = policyNodes(plain)
		(&walker{env: env, c: c}).value(sections, reflect.TypeOf(f), "", "")
		if err := sections.Decode(&f); err != nil {
			c.add("", "decoding: %v", err)
		}
	}
	if creds == nil {
		for name := range f.Fail2Ban.CredentialOverrides {
			creds = append(creds, Credential{Name: name})
		}
	}
	cfg := &Config{Credentials: creds}
	buildPolicy(c, cfg, f)
	if len(c.problems) > 0 {
		sortProblems(c.problems)
		return domain.BanPolicy{}, &Error{Problems: c.problems}
	}
	return cfg.BanPolicy(), nil
}

// policyNodes splits a document into a mapping of its policy sections and
// the names and types of its credentials (nil without a credentials list).
func policyNodes(root *yaml.Node) (*yaml.Node, []Credential) {
	sections := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	var creds []Credential
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch {
		case slices.Contains(policySections, k.Value):
			sections.Content = append(sections.Content, k, v)
		case k.Value == "credentials" && v.Kind == yaml.SequenceNode:
			creds = []Credential{}
			for _, item := range v.Content {
				var nt struct {
					Name string `yaml:"name"`
					Type string `yaml:"type"`
				}
				if item.Decode(&nt) != nil || nt.Name == "" {
					continue
				}
				t, _, _ := credentialType(nt.Type)
				creds = append(creds, Credential{Name: nt.Name, Type: t})
			}
		}
	}
	return sections, creds
}
