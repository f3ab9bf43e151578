package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Config is a loaded, validated configuration. Every default is applied
// and every value resolved, so its users read plain values. It is not
// changed after Parse returns and may be shared.
type Config struct {
	Server   Server   `yaml:"server"`
	Fail2Ban Fail2Ban `yaml:"fail2ban"`
	// Credentials in file order, which is the round-robin tie order.
	Credentials []Credential `yaml:"credentials"`
	// Models are the top-level models followed by those listed inside
	// credentials (bound to their credential).
	Models []Model `yaml:"models,omitempty"`
	// ModelAlias maps a name clients may send to a public model id (see
	// ResolveAlias).
	ModelAlias map[string]string `yaml:"model_alias,omitempty"`
	Monitoring Monitoring        `yaml:"monitoring"`
	OTel       OTel              `yaml:"otel"`
	Events     Events            `yaml:"events"`
	Fallback   Fallback          `yaml:"fallback"`
	ModelBench ModelBench        `yaml:"model_bench"`
	Cooldown   Cooldown          `yaml:"cooldown"`
	// Warnings are things that load but deserve the operator's attention
	// (ignored keys, rules with no effect, unset optional variables); the
	// caller logs them.
	Warnings []string `yaml:"-"`
}

// Load reads and parses the config file at path, resolving os.environ/VAR
// from the process environment. A *Error lists every problem.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Parse(data, os.LookupEnv)
	if ce := (*Error)(nil); errors.As(err, &ce) {
		ce.File = path
	}
	return cfg, err
}

// Parse parses a config document. env looks variables up for
// os.environ/VAR values (nil means an empty environment). On failure the
// error is a *Error listing every problem.
func Parse(data []byte, env func(string) (string, bool)) (*Config, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	c := newChecker()
	var f fileConfig
	root, err := document(data)
	if err != nil {
		return nil, &Error{Problems: []Problem{{Message: err.Error()}}}
	}
	if root != nil {
		x := &expander{active: map[*yaml.Node]bool{}}
		plain, err := x.copy(root, "")
		if err != nil {
			return nil, &Error{Problems: []Problem{{Message: err.Error()}}}
		}
		(&walker{env: env, c: c}).value(plain, reflect.TypeOf(f), "", "")
		if err := plain.Decode(&f); err != nil {
			c.add("", "decoding: %v", err)
		}
	}
	cfg := build(c, f)
	if len(c.problems) > 0 {
		sortProblems(c.problems)
		return nil, &Error{Problems: c.problems}
	}
	cfg.Warnings = c.warnings
	return cfg, nil
}

// document parses the single YAML document in data; nil for an empty one.
func document(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, withLine(err, data)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, errors.New("the file must hold one YAML document, not several")
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// build turns the decoded file into a Config, reporting every problem.
func build(c *checker, f fileConfig) *Config {
	cfg := &Config{Server: buildServer(c, f.Server)}
	var nested []placed
	cfg.Credentials, nested = buildCredentials(c, f.Credentials)
	cfg.Models = buildModels(c, f.Models, nested, cfg.Credentials)
	cfg.ModelAlias = buildAliases(c, f.ModelAlias)
	buildPolicy(c, cfg, f)
	cfg.Monitoring.PrometheusEnabled = c.boolean("monitoring.prometheus_enabled", f.Monitoring.PrometheusEnabled, true)
	cfg.Monitoring.PprofListen = c.hostPort("monitoring.pprof_listen", f.Monitoring.PprofListen)
	cfg.OTel = buildOTel(c, f.OTel)
	cfg.Events = buildEvents(c, f.Events)
	cfg.Fallback = buildFallback(c, f.Fallback)
	return cfg
}

// withLine adds a line to a YAML syntax error that names none. The
// parser names none for a character YAML does not allow (the line and
// byte of the first such character are added) or for a problem on the
// first line, which it leaves out.
func withLine(err error, data []byte) error {
	msg := err.Error()
	if strings.Contains(msg, "line ") {
		return err
	}
	for i, r := range string(data) {
		if _, size := utf8.DecodeRune(data[i:]); !yamlPrintable(r) || r == utf8.RuneError && size == 1 {
			return fmt.Errorf("%s (line %d, byte %d)", msg, 1+bytes.Count(data[:i], []byte("\n")), i+1)
		}
	}
	return fmt.Errorf("%s (line 1)", msg)
}

// yamlPrintable reports a character YAML allows in a document.
func yamlPrintable(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r' || r == 0x85:
		return true
	case r < 0x20 || r >= 0x7f && r < 0xa0:
		return false
	case r == 0xfffe || r == 0xffff:
		return false
	}
	return true
}
