package config_test

import (
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
