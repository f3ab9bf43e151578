package config

import (
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// OpenTelemetry defaults (the keys and defaults of auto_ai_router's otel
// section, with airouter's service name).
const (
	DefaultOTelProtocol     = "grpc"
	DefaultOTelGRPCEndpoint = "localhost:4317"
	DefaultOTelHTTPEndpoint = "localhost:4318"
	DefaultOTelServiceName  = "airouter"
)

// OTel is the OpenTelemetry section: where and how traces are exported.
type OTel struct {
	// Enabled turns OpenTelemetry on; Tracing says whether traces are
	// then recorded.
	Enabled bool `yaml:"enabled"`
	// Endpoint is the OTLP collector: host:port, or an http(s) URL (its
	// scheme then decides TLS, and for http a path replaces
	// /v1/traces).
	Endpoint string `yaml:"endpoint"`
	// Protocol is grpc or http (OTLP over HTTP with protobuf bodies).
	Protocol string `yaml:"protocol"`
	// Insecure sends to a host:port endpoint without TLS.
	Insecure    bool   `yaml:"insecure"`
	ServiceName string `yaml:"service_name"`
	// TracesEnabled records spans when Enabled.
	TracesEnabled bool `yaml:"traces_enabled"`
	// TraceSampleRatio is the share of new traces sampled, 0..1; a trace
	// adopted from a client keeps the client's decision.
	TraceSampleRatio float64 `yaml:"trace_sample_ratio"`
	// TrustIncomingTraceparent makes a client's W3C traceparent the
	// parent of the request's span; otherwise every request starts a new
	// trace.
	TrustIncomingTraceparent bool `yaml:"trust_incoming_traceparent"`
	// Headers are sent with every export (a collector's credentials);
	// their values are secrets.
	Headers map[string]string `yaml:"headers,omitempty"`
}

// Tracing reports whether spans are recorded and exported.
func (o OTel) Tracing() bool { return o.Enabled && o.TracesEnabled }

// EndpointIsURL reports whether Endpoint is a URL rather than host:port.
func (o OTel) EndpointIsURL() bool { return strings.Contains(o.Endpoint, "://") }

type fileOTel struct {
	Enabled                  string            `yaml:"enabled"`
	Endpoint                 string            `yaml:"endpoint"`
	Protocol                 string            `yaml:"protocol"`
	Insecure                 string            `yaml:"insecure"`
	ServiceName              string            `yaml:"service_name"`
	TracesEnabled            string            `yaml:"traces_enabled"`
	TraceSampleRatio         string            `yaml:"trace_sample_ratio"`
	TrustIncomingTraceparent string            `yaml:"trust_incoming_traceparent"`
	Headers                  map[string]string `yaml:"headers"`
}

func buildOTel(c *checker, f fileOTel) OTel {
	o := OTel{
		Enabled:                  c.boolean("otel.enabled", f.Enabled, false),
		Insecure:                 c.boolean("otel.insecure", f.Insecure, true),
		TracesEnabled:            c.boolean("otel.traces_enabled", f.TracesEnabled, true),
		TrustIncomingTraceparent: c.boolean("otel.trust_incoming_traceparent", f.TrustIncomingTraceparent, true),
		ServiceName:              strings.TrimSpace(f.ServiceName),
		Protocol:                 strings.ToLower(strings.TrimSpace(f.Protocol)),
		Endpoint:                 strings.TrimSpace(f.Endpoint),
		TraceSampleRatio:         sampleRatio(c, "otel.trace_sample_ratio", f.TraceSampleRatio),
	}
	if !c.given("otel.service_name", o.ServiceName) {
		o.ServiceName = DefaultOTelServiceName
	}
	switch {
	case !c.given("otel.protocol", o.Protocol):
		o.Protocol = DefaultOTelProtocol
	case o.Protocol != "grpc" && o.Protocol != "http":
		c.add("otel.protocol", "%s is not grpc or http", c.show("otel.protocol", f.Protocol))
		o.Protocol = DefaultOTelProtocol
	}
	if !c.given("otel.endpoint", o.Endpoint) {
		o.Endpoint = DefaultOTelGRPCEndpoint
		if o.Protocol == "http" {
			o.Endpoint = DefaultOTelHTTPEndpoint
		}
	} else if msg := endpointProblem(o.Endpoint); msg != "" {
		c.add("otel.endpoint", "%s %s", c.show("otel.endpoint", f.Endpoint), msg)
	}
	o.Headers = otelHeaders(c, f.Headers)
	return o
}

// sampleRatio parses an optional ratio in [0, 1]; the default is 1.
func sampleRatio(c *checker, path, s string) float64 {
	if !c.given(path, s) {
		return 1
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v < 0 || v > 1 {
		c.add(path, "%s is not a number from 0 to 1", c.show(path, s))
		return 1
	}
	return v
}

// endpointProblem says what is wrong with a collector endpoint, or "".
func endpointProblem(e string) string {
	if strings.Contains(e, "://") {
		u, err := url.Parse(e)
		switch {
		case err != nil:
			return "is not a URL"
		case u.Scheme != "http" && u.Scheme != "https":
			return "must be host:port or an http or https URL"
		case u.Host == "":
			return "names no host"
		case u.User != nil:
			return "must not hold credentials; use otel.headers"
		}
		return ""
	}
	host, port, err := net.SplitHostPort(e)
	if err != nil || host == "" {
		return "is not host:port or an http or https URL"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "has no valid port"
	}
	return ""
}

// otelHeaders checks the export headers: names must be HTTP header names,
// values (secrets, never shown) must be sendable. A value read from an
// unset variable drops the header, with a warning.
func otelHeaders(c *checker, in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for _, k := range slices.Sorted(maps.Keys(in)) {
		path := keyPath("otel.headers", k)
		v := in[k]
		switch {
		case !httpguts.ValidHeaderFieldName(k):
			c.add(path, "%q is not an HTTP header name", k)
		case v == "":
			if name, ok := c.unset[path]; ok {
				c.warn(path, "os.environ/%s is not set; the header is not sent", name)
			}
		case !httpguts.ValidHeaderFieldValue(v):
			c.add(path, "the value is not a valid HTTP header value")
		default:
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
