package config

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/airouter/airouter/redact"
)

// checker collects problems and warnings while the file is turned into a
// Config, and parses scalars with messages that name the path and value.
type checker struct {
	problems []Problem
	warnings []string
	// bad holds paths whose value had the wrong shape; it was reported
	// once and replaced by null, so problems under it are not repeated.
	bad []string
	// fromEnv maps the path of every value written os.environ/VAR to VAR;
	// unset holds those whose variable was unset or empty.
	fromEnv map[string]string
	unset   map[string]string
}

func newChecker() *checker {
	return &checker{fromEnv: map[string]string{}, unset: map[string]string{}}
}

func (c *checker) add(path, format string, args ...any) {
	for _, b := range c.bad {
		if path == b || strings.HasPrefix(path, b+".") || strings.HasPrefix(path, b+"[") {
			return
		}
	}
	c.problems = append(c.problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) warn(path, format string, args ...any) {
	c.warnings = append(c.warnings, Problem{Path: path, Message: fmt.Sprintf(format, args...)}.String())
}

// show renders a value for a message: quoted, "[redacted]" when the path
// holds a secret, a URL's user info masked, and naming the variable it was
// read from.
func (c *checker) show(path, v string) string {
	switch {
	case secretPath(path):
		v = "[redacted]"
	case strings.HasSuffix(path, "base_url") || strings.HasSuffix(path, "nats_url") || path == "otel.endpoint":
		v = redact.URLs(v)
	}
	s := strconv.Quote(v)
	if name, ok := c.fromEnv[path]; ok {
		s += " (os.environ/" + name + ")"
	}
	return s
}

// required reports whether a required value is present, and reports it
// missing otherwise, naming the variable it was to be read from.
func (c *checker) required(path, v string) bool {
	if v != "" {
		return true
	}
	if name, ok := c.unset[path]; ok {
		c.add(path, "required, but os.environ/%s is not set", name)
	} else {
		c.add(path, "required")
	}
	return false
}

// given reports whether an optional value is present. An optional value
// whose variable is unset takes its default, with a warning.
func (c *checker) given(path, v string) bool {
	if v != "" {
		return true
	}
	if name, ok := c.unset[path]; ok {
		c.warn(path, "os.environ/%s is not set; using the default", name)
	}
	return false
}

// integer parses an optional integer; ok is false when it was given and
// is not one (the problem is reported and def returned).
func (c *checker) integer(path, s string, def int) (v int, ok bool) {
	if !c.given(path, s) {
		return def, true
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		c.add(path, "%s is not an integer", c.show(path, s))
		return def, false
	}
	return n, true
}

func (c *checker) boolean(path, s string, def bool) bool {
	if !c.given(path, s) {
		return def
	}
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		c.add(path, "%s is not true or false", c.show(path, s))
		return def
	}
	return b
}

// duration parses an optional Go duration that may not be negative.
func (c *checker) duration(path, s string, def time.Duration) time.Duration {
	if !c.given(path, s) {
		return def
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		c.add(path, "%s is not a duration", c.show(path, s))
		return def
	}
	if d < 0 {
		c.add(path, "%s is negative", c.show(path, s))
		return def
	}
	return d
}

// banDuration parses "permanent" or a positive Go duration. An empty value
// gives def and inherited=true.
func (c *checker) banDuration(path, s string, def BanDuration) (d BanDuration, inherited bool) {
	if !c.given(path, s) {
		return def, true
	}
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "permanent") {
		return BanDuration{Permanent: true}, false
	}
	v, err := time.ParseDuration(t)
	if err != nil {
		c.add(path, "%s is not a duration or \"permanent\"", c.show(path, s))
		return def, false
	}
	if v <= 0 {
		c.add(path, "%s must be positive, or \"permanent\"", c.show(path, s))
		return def, false
	}
	return BanDuration{Duration: v}, false
}

// size parses a byte count, either plain ("1073741824") or with a unit
// ("1GiB", "512MB"); -1 is returned as is.
func (c *checker) size(path, s string, def int64) int64 {
	if !c.given(path, s) {
		return def
	}
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "-1" {
		return -1
	}
	units := []struct {
		suffix string
		scale  int64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"b", 1},
	}
	scale := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, scale = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.scale
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/scale {
		c.add(path, "%s is not a size in bytes (such as 1073741824 or 1GiB)", c.show(path, s))
		return def
	}
	return n * scale
}

// secretPath reports whether the value at path is a secret.
func secretPath(path string) bool {
	return strings.HasSuffix(path, "master_key") || strings.HasSuffix(path, "api_key") ||
		strings.HasPrefix(path, "server.api_keys") || strings.HasPrefix(path, "otel.headers")
}

// hostPort checks a listener's address, host:port with a port in
// 1..65535 (an empty host is every interface), and returns it in
// net.JoinHostPort's form, or "" after reporting it. A blank address is
// no listener: "" with nothing reported.
func (c *checker) hostPort(path, raw string) string {
	if strings.TrimSpace(raw) == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(strings.TrimSpace(raw))
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil || n < 1 || n > 65535 {
		c.add(path, "%s is not host:port (port 1..65535)", c.show(path, raw))
		return ""
	}
	return net.JoinHostPort(host, port)
}
