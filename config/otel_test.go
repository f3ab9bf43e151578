package config_test

import (
	"strings"
	"testing"

	"github.com/airouter/airouter/config"
)

// The otel defaults are auto_ai_router's: off, gRPC to localhost:4317
// (localhost:4318 for HTTP), no TLS, every trace sampled, a client's
// traceparent trusted; the service is airouter.
func TestOTelDefaults(t *testing.T) {
	base := "server:\n  master_key: sk-master\ncredentials:\n  - name: a\n    type: openai\n    api_key: k\n    base_url: http://a.example\n"
	cfg, err := config.Parse([]byte(base), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := config.OTel{Endpoint: "localhost:4317", Protocol: "grpc", Insecure: true, ServiceName: "airouter",
		TracesEnabled: true, TraceSampleRatio: 1, TrustIncomingTraceparent: true}
	if o := cfg.OTel; o.Enabled || o.Tracing() || o.Endpoint != want.Endpoint || o.Protocol != want.Protocol ||
		o.Insecure != want.Insecure || o.ServiceName != want.ServiceName || !o.TracesEnabled ||
		o.TraceSampleRatio != 1 || !o.TrustIncomingTraceparent || o.Headers != nil {
		t.Errorf("defaults %+v, want %+v", o, want)
	}
	cfg, err = config.Parse([]byte(base+"otel:\n  enabled: true\n  protocol: http\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.OTel; !o.Tracing() || o.Endpoint != "localhost:4318" {
		t.Errorf("protocol http: tracing %v, endpoint %q; want on, localhost:4318", o.Tracing(), o.Endpoint)
	}
}

// Bad otel values are all reported at once, each with its path and value;
// a header's value is a secret and is never shown, and one read from an
// unset variable is a warning that drops the header.
func TestOTelRejectsBadValues(t *testing.T) {
	base := "server:\n  master_key: sk-master\ncredentials:\n  - name: a\n    type: openai\n    api_key: k\n    base_url: http://a.example\n"
	bad := base + `otel:
  enabled: maybe
  protocol: thrift
  endpoint: "ftp://collector:4317"
  trace_sample_ratio: "1.5"
  headers:
    "bad header": x
    Authorization: "Bearer sk-otel-secret-value\n"
`
	_, err := config.Parse([]byte(bad), nil)
	if err == nil {
		t.Fatal("bad otel values accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		`otel.enabled`, `"maybe"`,
		`otel.protocol: "thrift" is not grpc or http`,
		`otel.endpoint: "ftp://collector:4317" must be host:port or an http or https URL`,
		`otel.trace_sample_ratio: "1.5" is not a number from 0 to 1`,
		`"bad header" is not an HTTP header name`,
		`otel.headers.Authorization: the value is not a valid HTTP header value`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "sk-otel-secret-value") {
		t.Errorf("the error shows a header's value:\n%s", msg)
	}

	env := func(string) (string, bool) { return "", false }
	cfg, err := config.Parse([]byte(base+"otel:\n  enabled: true\n  headers:\n    x-api-key: os.environ/OTEL_KEY\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.OTel.Headers["x-api-key"]; ok || !strings.Contains(strings.Join(cfg.Warnings, "\n"), "os.environ/OTEL_KEY is not set") {
		t.Errorf("headers %v, warnings %q", cfg.OTel.Headers, cfg.Warnings)
	}
}
