// Package collector is an OpenTelemetry trace collector for tests: it
// takes OTLP exports over HTTP (protobuf bodies on /v1/traces) and over
// gRPC (the collector's generated TraceService), on 127.0.0.1, and keeps
// every span with the headers (or gRPC metadata) it came with. Imported
// only by _test.go files.
package collector

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// Span is one received span with its resource's service.name and
// service.version.
type Span struct {
	*tracepb.Span
	Service, Version string
}

// TraceID and SpanID are the ids in the hex form of a W3C traceparent.
func (s Span) TraceID() string      { return hex.EncodeToString(s.GetTraceId()) }
func (s Span) SpanID() string       { return hex.EncodeToString(s.GetSpanId()) }
func (s Span) ParentSpanID() string { return hex.EncodeToString(s.GetParentSpanId()) }

// Attr returns an attribute's value as a string (ints in decimal), and
// whether the span has it.
func (s Span) Attr(key string) (string, bool) {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return valueString(kv.GetValue()), true
		}
	}
	return "", false
}

func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	}
	return v.String()
}

// Collector keeps what it was sent.
type Collector struct {
	mu      sync.Mutex
	spans   []Span
	headers []http.Header
}

// Spans returns every span received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Headers returns the headers (or gRPC metadata) of every export so far.
func (c *Collector) Headers() []http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]http.Header(nil), c.headers...)
}

func (c *Collector) take(req *coltracepb.ExportTraceServiceRequest, h http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.headers = append(c.headers, h)
	for _, rs := range req.GetResourceSpans() {
		var service, version string
		for _, kv := range rs.GetResource().GetAttributes() {
			switch kv.GetKey() {
			case "service.name":
				service = valueString(kv.GetValue())
			case "service.version":
				version = valueString(kv.GetValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, Span{Span: s, Service: service, Version: version})
			}
		}
	}
}

// HTTP starts an OTLP/HTTP collector; its URL (http://127.0.0.1:port)
// is the endpoint. It stops at the end of the test.
func HTTP(t testing.TB) (*Collector, *httptest.Server) {
	t.Helper()
	c := &Collector{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		req := &coltracepb.ExportTraceServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(body, req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.take(req, r.Header.Clone())
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return c, srv
}

// GRPC starts an OTLP/gRPC collector and returns it with its host:port.
// It stops at the end of the test.
func GRPC(t testing.TB) (*Collector, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &Collector{}
	s := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(s, &traceService{c: c})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(ln)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
	return c, ln.Addr().String()
}

type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	c *Collector
}

func (ts *traceService) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	h := http.Header{}
	md, _ := metadata.FromIncomingContext(ctx)
	for k, vs := range md {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	ts.c.take(req, h)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}
