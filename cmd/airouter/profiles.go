package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/hashicorp/go-hclog"
)

// serveProfiles serves the Go runtime's profiles and execution traces
// (/debug/pprof/: CPU, heap, allocations, goroutines, trace) on addr,
// monitoring.pprof_listen, on a listener of their own so that they are
// never on the proxy's port. "" serves nothing. It returns the stop.
func serveProfiles(addr string, logger hclog.Logger) (func(), error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("monitoring.pprof_listen: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// No WriteTimeout: a CPU profile or a trace answers after the
	// seconds it was asked for.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: logger.Named("pprof").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	logger.Info("serving runtime profiles", "addr", ln.Addr().String(), "path", "/debug/pprof/")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
		<-done
	}, nil
}
