package config_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/airouter/airouter/config"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/config")

const fixtures = "../testdata/config"

// testEnv is the fixed environment the fixtures are parsed with.
func testEnv(name string) (string, bool) {
	v, ok := map[string]string{
		"AIROUTER_TEST_MASTER_KEY": "sk-SECRET-master-from-env",
		"AIROUTER_TEST_CLIENT_KEY": "sk-SECRET-client-from-env",
		"AIROUTER_TEST_OPENAI_KEY": "sk-SECRET-openai-from-env",
		"AIROUTER_TEST_BASE_URL":   "https://api.openai.com/v1",
		"AIROUTER_TEST_PORT":       "9090",
		"AIROUTER_TEST_RPM":        "120",
		"AIROUTER_TEST_TRUE":       "true",
		"AIROUTER_TEST_BAN":        "15m",
		"AIROUTER_TEST_MODEL":      "gpt-4o",
		"AIROUTER_TEST_ALIAS":      "gpt4",
		"AIROUTER_TEST_WORD":       "abc",
		"AIROUTER_TEST_EMPTY":      "",
	}[name]
	return v, ok
}

// TestGoodFixtures loads every *.good.yaml and compares the effective
// config (secrets redacted), its route table and its warnings with the
// golden <name>.good.golden.
func TestGoodFixtures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(fixtures, "*.good.yaml"))
	if len(files) == 0 {
		t.Fatal("no good fixtures")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			cfg, err := config.Parse(read(t, file), testEnv)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			golden(t, filepath.Join(fixtures, name+".golden"), render(t, cfg))
		})
	}
}

// TestBadFixtures parses every *.bad.yaml and compares its problems, one
// per line, with the golden <name>.bad.errors.
func TestBadFixtures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(fixtures, "*.bad.yaml"))
	if len(files) == 0 {
		t.Fatal("no bad fixtures")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			cfg, err := config.Parse(read(t, file), testEnv)
			if err == nil {
				t.Fatalf("Parse succeeded:\n%s", cfg)
			}
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error is %T, want *config.Error: %v", err, err)
			}
			var b strings.Builder
			for _, p := range ce.Problems {
				b.WriteString(p.String() + "\n")
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("the error shows a secret:\n%v", err)
			}
			golden(t, filepath.Join(fixtures, name+".errors"), b.String())
		})
	}
}

func render(t *testing.T, cfg *config.Config) string {
	t.Helper()
	routes, err := yaml.Marshal(cfg.Routes())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(cfg.String())
	b.WriteString("# routes\n")
	for _, line := range strings.Split(strings.TrimSpace(string(routes)), "\n") {
		b.WriteString("#   " + line + "\n")
	}
	for _, w := range cfg.Warnings {
		b.WriteString("# warning: " + w + "\n")
	}
	return b.String()
}

func read(t testing.TB, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func golden(t *testing.T, file, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./config -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run go test ./config -update after checking):\n--- got\n%s--- want\n%s", file, got, want)
	}
}

// events.creds_file names a readable file for an external cluster.
func TestEventsCredsFile(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "router.creds")
	if err := os.WriteFile(creds, []byte("-----BEGIN NATS USER JWT-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := func(path string) []byte {
		return []byte("server:\n  master_key: sk-master\ncredentials:\n  - name: a\n    type: openai\n    api_key: k\n" +
			"    base_url: http://a.example\nevents:\n  nats_url: nats://127.0.0.1:4222\n  creds_file: " + path + "\n")
	}
	noEnv := func(string) (string, bool) { return "", false }
	cfg, err := config.Parse(doc(creds), noEnv)
	if err != nil || cfg.Events.CredsFile != creds {
		t.Fatalf("Parse = %v; creds_file %q", err, cfg.Events.CredsFile)
	}
	if _, err := config.Parse(doc(dir), noEnv); err == nil || !strings.Contains(err.Error(), "events.creds_file") ||
		!strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("a directory as creds_file: %v", err)
	}
}

// A creds_file read from an unset variable is said, not dropped silently,
// and a bad nats_url does not make a good creds_file look misplaced.
func TestEventsCredsFileFromTheEnvironment(t *testing.T) {
	doc := []byte("server:\n  master_key: sk-master\ncredentials:\n  - name: a\n    type: openai\n    api_key: k\n" +
		"    base_url: http://a.example\nevents:\n  nats_url: nats://127.0.0.1:4222\n  creds_file: os.environ/AIROUTER_TEST_CREDS\n")
	cfg, err := config.Parse(doc, func(string) (string, bool) { return "", false })
	if err != nil || cfg.Events.CredsFile != "" {
		t.Fatalf("Parse = %v, creds_file %q", err, cfg.Events.CredsFile)
	}
	if !strings.Contains(strings.Join(cfg.Warnings, "\n"), "events.creds_file") {
		t.Fatalf("no warning names events.creds_file: %q", cfg.Warnings)
	}
	creds := filepath.Join(t.TempDir(), "router.creds")
	if err := os.WriteFile(creds, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := []byte("server:\n  master_key: sk-master\ncredentials:\n  - name: a\n    type: openai\n    api_key: k\n" +
		"    base_url: http://a.example\nevents:\n  nats_url: http://not-nats\n  creds_file: " + creds + "\n")
	_, err = config.Parse(bad, func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), "events.nats_url") || strings.Contains(err.Error(), "events.creds_file") {
		t.Fatalf("a bad nats_url with a good creds_file: %v", err)
	}
}
