package config_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/airouter/airouter/config"
)

const base = `
server:
  master_key: sk-SECRET-master
credentials:
  - name: a
    type: openai
    api_key: sk-SECRET-a
    base_url: http://a.example
`

// problems parses doc and returns its problems, one string each; it fails
// the test if doc parses.
func problems(t *testing.T, doc string) []string {
	t.Helper()
	_, err := config.Parse([]byte(doc), testEnv)
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("Parse error = %v, want a *config.Error", err)
	}
	var out []string
	for _, p := range ce.Problems {
		out = append(out, p.String())
	}
	return out
}

func TestAliasCycleIsAProblem(t *testing.T) {
	got := problems(t, base+"models: &m\n  - name: x\n  - *m\n")
	if len(got) != 1 || !strings.Contains(got[0], "refers to a node that contains it") {
		t.Errorf("problems = %q", got)
	}
}

// TestAliasBombIsBounded: nested aliases that would expand to billions of
// nodes are refused instead of exhausting memory.
func TestAliasBombIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(base + "x-bomb:\n  l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n",
			i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	got := problems(t, b.String())
	if len(got) != 1 || !strings.Contains(got[0], "expands to more than") {
		t.Errorf("problems = %q", got)
	}
}

// TestMergeKeys: keys written in a mapping win over merged ones, and an
// earlier merged mapping wins over a later one.
func TestMergeKeys(t *testing.T) {
	cfg, err := config.Parse([]byte(base+`
x-templates:
  slow: &slow {rpm: 10, tpm: 100, weight: 2}
  fast: &fast {rpm: 1000, model: fast-upstream}
models:
  - <<: [*slow, *fast]
    name: m
    tpm: 7
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := config.Model{Name: "m", Model: "fast-upstream", RPM: 10, TPM: 7, Weight: 2}
	if len(cfg.Models) != 1 || cfg.Models[0] != want {
		t.Errorf("Models = %+v, want [%+v]", cfg.Models, want)
	}
}

func TestMergeOfAScalarIsAProblem(t *testing.T) {
	got := problems(t, base+"x-t: &s hello\nmodels:\n  - <<: *s\n    name: m\n")
	if len(got) != 1 || got[0] != "models[0].<<: a merge key (<<) takes a mapping or a list of mappings" {
		t.Errorf("problems = %q", got)
	}
}

// TestEnvResolution reads strings, numbers, booleans and durations from the
// environment, in values, list items and map keys.
func TestEnvResolution(t *testing.T) {
	cfg, err := config.Parse(read(t, fixtures+"/env.good.yaml"), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.MasterKey != "sk-SECRET-master-from-env" {
		t.Errorf("MasterKey = %q", cfg.Server.MasterKey)
	}
	if len(cfg.Server.APIKeys) != 1 || cfg.Server.APIKeys[0] != "sk-SECRET-client-from-env" {
		t.Errorf("APIKeys = %q", cfg.Server.APIKeys)
	}
	cr, ok := cfg.Credential("openai")
	if !ok || cr.APIKey != "sk-SECRET-openai-from-env" || cr.RPM != 120 || !cr.IsFallback ||
		cr.BaseURL != "https://api.openai.com" {
		t.Errorf("Credential = %+v, %v", cr, ok)
	}
	if cfg.Server.Port != 9090 || cfg.Fail2Ban.BanDuration.String() != "15m0s" {
		t.Errorf("Port = %d, BanDuration = %v", cfg.Server.Port, cfg.Fail2Ban.BanDuration)
	}
	if cfg.ResolveAlias("gpt4") != "gpt-4o" || cfg.ResolveAlias("other") != "other" {
		t.Errorf("ModelAlias = %v", cfg.ModelAlias)
	}
	// Unset optional values take their defaults.
	if cfg.Server.RequestTimeout != config.DefaultRequestTimeout || cfg.Server.LoggingLevel != "info" ||
		!cfg.Events.Embedded() {
		t.Errorf("defaults not applied: %+v %+v", cfg.Server, cfg.Events)
	}
}

// TestEnvIsReadOnlyForOsEnviron: a value that merely contains the prefix,
// or an env value that itself looks like a reference, is taken literally.
func TestEnvIsReadOnlyForOsEnviron(t *testing.T) {
	env := func(name string) (string, bool) {
		return map[string]string{"KEY": "os.environ/OTHER"}[name], name == "KEY"
	}
	cfg, err := config.Parse([]byte(strings.Replace(base, "sk-SECRET-a", "os.environ/KEY", 1)+
		"model_alias:\n  x: prefix-os.environ/KEY\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Credentials[0].APIKey != "os.environ/OTHER" || cfg.ModelAlias["x"] != "prefix-os.environ/KEY" {
		t.Errorf("APIKey = %q, alias = %q", cfg.Credentials[0].APIKey, cfg.ModelAlias["x"])
	}
}

// TestManyPlainCredentialsLoad: the alias limit counts only the nodes
// aliases expand to, so a large document written out plainly (15,000
// credentials, more than maxNodes nodes, no alias) loads.
func TestManyPlainCredentialsLoad(t *testing.T) {
	const n = 15000
	var b strings.Builder
	b.WriteString("server:\n  master_key: sk-SECRET-master\ncredentials:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - name: c%d\n    type: openai\n    api_key: sk-SECRET-%d\n    base_url: http://c%d.example\n", i, i, i)
	}
	cfg, err := config.Parse([]byte(b.String()), nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(cfg.Credentials) != n {
		t.Errorf("credentials = %d, want %d", len(cfg.Credentials), n)
	}
}
