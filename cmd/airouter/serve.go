package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/config"
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
	rt, err := startRouter(ctx, cfg, logger)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", cfg.Server.Port))
	if err != nil {
		rt.close()
		return fmt.Errorf("listen on port %d: %w", cfg.Server.Port, err)
	}
	return rt.serve(ctx, ln)
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

// serve answers HTTP on ln until ctx ends, then lets in-flight requests
// finish and closes the router.
func (rt *router) serve(ctx context.Context, ln net.Listener) error {
	srv := rt.httpServer()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	rt.logger.Info("airouter listening", "addr", ln.Addr().String(),
		"applied_seq", rt.live.Load().Seq())
	var serveErr error
	select {
	case <-ctx.Done():
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
