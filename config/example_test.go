package config_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/airouter/airouter/config"
)

// TestExampleLoads: config.example.yaml at the repository root loads with
// an empty environment, with no warnings, and documents every key.
func TestExampleLoads(t *testing.T) {
	cfg, err := config.Parse(read(t, "../config.example.yaml"), nil)
	if err != nil {
		t.Fatalf("config.example.yaml: %v", err)
	}
	if len(cfg.Warnings) > 0 {
		t.Errorf("warnings: %q", cfg.Warnings)
	}
	if len(cfg.Routes()) == 0 {
		t.Error("the example routes no model")
	}
	// Every key of the effective config appears in the example, commented
	// out or not.
	example := string(read(t, "../config.example.yaml"))
	for _, line := range strings.Split(cfg.String(), "\n") {
		key, _, ok := strings.Cut(strings.TrimLeft(strings.TrimSpace(line), "- "), ":")
		if ok && !strings.Contains(example, key+":") {
			t.Errorf("key %q is not documented in config.example.yaml", key)
		}
	}
}

// TestLoad reads a file and names it in its errors.
func TestLoad(t *testing.T) {
	if _, err := config.Load("../config.example.yaml"); err != nil {
		t.Errorf("Load(config.example.yaml): %v", err)
	}
	_, err := config.Load(fixtures + "/server.bad.yaml")
	if err == nil || !strings.HasPrefix(err.Error(), "config ../testdata/config/server.bad.yaml: 9 problems:\n  server.port:") {
		t.Errorf("Load(server.bad.yaml) error = %v", err)
	}
	if _, err := config.Load(t.TempDir() + "/missing.yaml"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v", err)
	}
}

// TestRedactedLeavesTheConfigAlone: String and Redacted show no secret and
// do not change the config.
func TestRedactedLeavesTheConfigAlone(t *testing.T) {
	cfg, err := config.Parse(read(t, fixtures+"/full.good.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.String(); strings.Contains(s, "SECRET") {
		t.Errorf("String shows a secret:\n%s", s)
	}
	r := cfg.Redacted()
	r.Fail2Ban.CredentialOverrides["reseller"].ErrorCodes[0] = 1
	r.Models[0].Name = "changed"
	if cfg.Server.MasterKey != "sk-SECRET-master" || cfg.Credentials[0].APIKey != "sk-SECRET-openai-1" ||
		cfg.Server.APIKeys[0] != "sk-SECRET-client-1" ||
		cfg.Fail2Ban.CredentialOverrides["reseller"].ErrorCodes[0] != 400 || cfg.Models[0].Name != "gpt-4o" {
		t.Errorf("Redacted changed the config: %+v", cfg)
	}
}

func TestErrorText(t *testing.T) {
	one := &config.Error{File: "c.yaml", Problems: []config.Problem{{Path: "server.prot", Message: "unknown key"}}}
	if got := one.Error(); got != "config c.yaml: server.prot: unknown key" {
		t.Errorf("Error() = %q", got)
	}
	two := &config.Error{Problems: []config.Problem{{Path: "a", Message: "x"}, {Message: "y"}}}
	if got := two.Error(); got != "config: 2 problems:\n  a: x\n  y" {
		t.Errorf("Error() = %q", got)
	}
}
