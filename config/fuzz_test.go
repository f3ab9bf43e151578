package config_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airouter/airouter/config"
)

// FuzzParse: no config document makes Parse panic; it returns a config or
// a *config.Error, never both, never neither; every problem says what is
// wrong, and names the path of the value (in Path or leading its message)
// or, for the document as a whole (its YAML syntax, its shape), the line or
// the document; and no problem
// repeats a secret from the environment. The seed corpus is every fixture
// under testdata/config.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtures, "*.yaml"))
	if len(files) == 0 {
		f.Fatal("no fixtures")
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := config.Parse(b, testEnv)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("%q: config %v and error %v", b, cfg != nil, err)
		}
		if err == nil {
			return
		}
		var ce *config.Error
		if !errors.As(err, &ce) || len(ce.Problems) == 0 {
			t.Fatalf("%q: error %T %v, want a *config.Error listing problems", b, err, err)
		}
		for _, p := range ce.Problems {
			if p.Message == "" {
				t.Errorf("%q: problem at %q says nothing", b, p.Path)
			}
			if p.Path == "" && !wholeDocument(p.Message) {
				t.Errorf("%q: problem %q names no path", b, p.Message)
			}
		}
		for _, v := range []string{"AIROUTER_TEST_MASTER_KEY", "AIROUTER_TEST_CLIENT_KEY", "AIROUTER_TEST_OPENAI_KEY"} {
			secret, _ := testEnv(v)
			if strings.Contains(err.Error(), secret) && !bytes.Contains(b, []byte(secret)) {
				t.Errorf("%q: error repeats the secret in %s: %v", b, v, err)
			}
		}
	})
}

// wholeDocument reports a problem found before the document's values are
// walked: one that names a line, the document or file, or starts with the
// path of the value (the alias expansion's "models[0].<<: ...").
func wholeDocument(msg string) bool {
	if strings.HasPrefix(msg, "yaml: ") {
		return strings.Contains(msg, "line ")
	}
	return strings.Contains(msg, ": ") || strings.Contains(msg, "document") || strings.Contains(msg, "file")
}
