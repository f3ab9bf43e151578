package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/heapfloor"
	"github.com/airouter/airouter/sysmon"
)

// shutdownGrace bounds how long in-flight requests may run after a signal.
const shutdownGrace = 30 * time.Second

func runServe(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "config.yaml", "the config file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return err
	}
	logger := newLogger(cfg.Server, stderr)
	for _, w := range cfg.Warnings {
		logger.Warn("config: " + w)
	}
	if stop := paceCollector(cfg.Server, logger); stop != nil {
		defer stop()
	}
	logMonitor(logger)
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", cfg.Server.Port))
	if err != nil {
		return fmt.Errorf("listen on port %d: %w", cfg.Server.Port, err)
	}
	stopProfiles, err := serveProfiles(cfg.Monitoring.PprofListen, logger)
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer stopProfiles()
	hup, stopHup := notifyHangup()
	defer stopHup()
	return serveProcess(ctx, cfg.Server, logger, ln, func(ctx context.Context) (*router, error) {
		rt, err := startRouter(ctx, cfg, logger)
		if err == nil {
			rt.reload.watch(ctx, *path, hup) // SIGHUP and POST /api/reload re-read it
		}
		return rt, err
	})
}

// serveProcess listens on ln before the router starts, so that /livez and
// /readyz answer (readyz 503) while start replays the log, then serves
// the router start returns until ctx ends. The listener opens first
// because a probe that cannot connect reads as a dead process, not as
// one still starting.
func serveProcess(ctx context.Context, s config.Server, logger hclog.Logger, ln net.Listener,
	start func(context.Context) (*router, error)) error {
	g := &gate{}
	srv := newHTTPServer(s, g, logger)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("airouter listening; replaying the event log before accepting requests", "addr", ln.Addr().String())
	rt, err := start(ctx)
	if err != nil {
		_ = srv.Close()
		<-errc
		return err
	}
	g.open(rt.handler())
	return rt.serveOn(ctx, srv, g, errc)
}

func newLogger(s config.Server, out io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "airouter",
		Level:      hclog.LevelFromString(s.LoggingLevel),
		Output:     out,
		JSONFormat: s.LoggingFormat == "json",
		TimeFormat: time.RFC3339,
	})
}

// serve answers HTTP on ln until ctx ends, then drains, lets in-flight
// requests finish and closes the router. The router has started already,
// so the gate is open before the first connection is accepted.
func (rt *router) serve(ctx context.Context, ln net.Listener) error {
	g := &gate{}
	g.open(rt.handler())
	srv := newHTTPServer(rt.cfg.Server, g, rt.logger)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	return rt.serveOn(ctx, srv, g, errc)
}

// serveOn serves through the open gate g until ctx ends or srv fails
// (errc); then it drains: /readyz answers 503 for
// server.shutdown_delay while requests are still served, then the server
// stops accepting, in-flight requests get shutdownGrace to finish, and
// the router closes.
func (rt *router) serveOn(ctx context.Context, srv *http.Server, g *gate, errc <-chan error) error {
	rt.logger.Info("airouter ready", "applied_seq", rt.live.Load().Seq())
	var serveErr error
	select {
	case <-ctx.Done():
		rt.drain(g)
	case serveErr = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		rt.logger.Warn("in-flight requests did not finish in time", "error", err)
	}
	closeErr := rt.close()
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return closeErr
}

// drain reports not ready and waits server.shutdown_delay on the router's
// clock, still serving, so that load balancers take the replica out
// before it stops accepting.
func (rt *router) drain(g *gate) {
	d := rt.cfg.Server.ShutdownDelay
	if d <= 0 {
		g.drain()
		return
	}
	// The timer exists before /readyz turns 503, so whoever sees the 503
	// can move a fake clock past it.
	timer := rt.clock.NewTimer(d)
	defer timer.Stop()
	g.drain()
	rt.logger.Info("draining: /readyz answers 503; requests are still served until the delay ends",
		"shutdown_delay", d.String())
	<-timer.Chan()
}

func newHTTPServer(s config.Server, h http.Handler, logger hclog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.ReadHeaderTimeout,
		WriteTimeout:      s.WriteTimeout,
		IdleTimeout:       s.IdleTimeout,
		ErrorLog:          logger.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
}

// logMonitor names how the runtime's monitor thread runs in this process
// (steadyMonitor, package sysmon).
func logMonitor(logger hclog.Logger) {
	godebug := os.Getenv("GODEBUG")
	switch {
	case sysmon.Ours(godebug):
		logger.Info("the runtime's monitor polls steadily, so a request after an idle moment does not wake it: GODEBUG=" + sysmon.Setting +
			" (GODEBUG=schedtrace=0 keeps the runtime's default)")
	case sysmon.Steady(godebug):
		logger.Info("GODEBUG sets schedtrace: the runtime's monitor polls steadily, and the runtime prints the scheduler's state each period it names")
	default:
		logger.Info("the runtime's monitor sleeps between requests (the runtime's default): each request after an idle moment wakes it")
	}
}

// paceCollector holds the garbage collector to server.heap_floor_mb
// (package heapfloor) unless the floor is 0 or GOGC is set in the
// environment, which is the operator's own pacing. It returns the stop, or
// nil.
func paceCollector(s config.Server, logger hclog.Logger) func() {
	switch {
	case s.HeapFloorMB == 0:
		return nil
	case os.Getenv("GOGC") != "":
		logger.Info("GOGC is set: the collector is paced by it, not by server.heap_floor_mb")
		return nil
	}
	p := heapfloor.Start(uint64(s.HeapFloorMB)<<20, 100)
	return p.Stop
}
