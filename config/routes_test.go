package config_test

import (
	"reflect"
	"testing"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
)

// TestTargetsWithoutModels: with no models configured every credential
// serves every model under its own name, at server.default_models_rpm.
func TestTargetsWithoutModels(t *testing.T) {
	cfg, err := config.Parse([]byte(`
server: {master_key: k, default_models_rpm: 30}
credentials:
  - {name: a, type: openai, api_key: x, base_url: "http://a", weight: 2}
  - {name: p, type: proxy, base_url: "http://p", is_fallback: true}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.FiltersModels() || len(cfg.Routes()) != 0 {
		t.Fatalf("FiltersModels = %v, Routes = %v", cfg.FiltersModels(), cfg.Routes())
	}
	want := []config.Target{
		{Credential: "a", Type: domain.CredentialOpenAI, UpstreamModel: "any/model", Weight: 2, RPM: 30, TPM: -1},
		{Credential: "p", Type: domain.CredentialProxy, UpstreamModel: "any/model", Weight: 1, RPM: 30, TPM: -1, IsFallback: true},
	}
	if got := cfg.Targets("any/model"); !reflect.DeepEqual(got, want) {
		t.Errorf("Targets = %+v\nwant %+v", got, want)
	}
}

// TestTargetsWithModels: an entry bound to a credential beats the entry
// for every credential; a credential with no entry for the model does not
// serve it; a proxy is sent the public name; weight 0 inherits.
func TestTargetsWithModels(t *testing.T) {
	cfg, err := config.Parse([]byte(`
server: {master_key: k}
credentials:
  - name: a
    type: openai
    api_key: x
    base_url: http://a
    weight: 4
    models:
      - {name: m, model: a-upstream, rpm: 5}
  - {name: b, type: anthropic, api_key: x, base_url: "http://b"}
  - {name: p, type: proxy, base_url: "http://p"}
models:
  - {name: m, model: generic-upstream, tpm: 1000, weight: 3}
  - {name: only-b, credential: b}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []config.Target{
		{Credential: "a", Type: domain.CredentialOpenAI, UpstreamModel: "a-upstream", Weight: 4, RPM: 5, TPM: -1},
		{Credential: "b", Type: domain.CredentialAnthropic, UpstreamModel: "generic-upstream", Weight: 3, RPM: -1, TPM: 1000},
		{Credential: "p", Type: domain.CredentialProxy, UpstreamModel: "m", Weight: 3, RPM: -1, TPM: 1000},
	}
	if got := cfg.Targets("m"); !reflect.DeepEqual(got, want) {
		t.Errorf("Targets(m) = %+v\nwant %+v", got, want)
	}
	if got := cfg.Targets("unknown"); len(got) != 0 {
		t.Errorf("Targets(unknown) = %+v, want none", got)
	}
	routes := cfg.Routes()
	if len(routes) != 2 || routes[0].Model != "m" || routes[1].Model != "only-b" ||
		len(routes[1].Targets) != 1 || routes[1].Targets[0].Credential != "b" {
		t.Errorf("Routes = %+v", routes)
	}
}

func TestCredentialLookup(t *testing.T) {
	cfg, err := config.Parse(read(t, fixtures+"/full.good.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cr, ok := cfg.Credential("relay"); !ok || cr.Type != domain.CredentialProxy || !cr.IsFallback {
		t.Errorf("Credential(relay) = %+v, %v", cr, ok)
	}
	if _, ok := cfg.Credential("nope"); ok {
		t.Error("Credential(nope) found")
	}
}

// TestBaseURLTrimming: a trailing "/v1" or "/" is trimmed, a path before
// it is kept.
func TestBaseURLTrimming(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:1/v1":          "http://h:1",
		"http://h:1/v1/":         "http://h:1",
		"http://h:1/":            "http://h:1",
		"https://h/openai/v1":    "https://h/openai",
		"https://h/v1beta":       "https://h/v1beta",
		"https://h/api/v1/v2/":   "https://h/api/v1/v2",
		"http://127.0.0.1:8000":  "http://127.0.0.1:8000",
		" http://h/v1 ":          "http://h",
		"https://h/proxy/v1/v1/": "https://h/proxy/v1",
	} {
		cfg, err := config.Parse([]byte(`
server: {master_key: k}
credentials: [{name: a, type: proxy, base_url: "`+in+`"}]
`), nil)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := cfg.Credentials[0].BaseURL; got != want {
			t.Errorf("base_url %q = %q, want %q", in, got, want)
		}
	}
}
