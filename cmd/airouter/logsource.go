package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/incident"
	"github.com/airouter/airouter/redact"
	"github.com/airouter/airouter/transport/eventlog"
	"github.com/airouter/airouter/transport/eventlog/streamspec"
)

// listenProbeTimeout bounds the attempt to reach a router's events.listen
// before replay falls back to a copy of its store directory.
const listenProbeTimeout = 2 * time.Second

// logSource is where a log subcommand reads events: a Reader over NATS or
// over a copy of a store directory, or an exported file.
type logSource struct {
	// log is what incident's tools read; its Notes receive notes: a log
	// that starts after position 1, a file's unreadable lines.
	log    *incident.Log
	reader *eventlog.Reader // nil for a file
	// what names the source in messages.
	what string
}

// openSource opens the source the flags name. cfg is -config's, or nil.
func openSource(ctx context.Context, f sourceFlags, cfg *config.Config, logger hclog.Logger, warn io.Writer) (*logSource, error) {
	n := 0
	for _, s := range []string{f.nats, f.file} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return nil, errors.New("give one of -nats and -file")
	}
	src, err := pickSource(ctx, f, cfg, logger, warn)
	if err != nil {
		return nil, err
	}
	src.log.Notes = warn
	return src, nil
}

func pickSource(ctx context.Context, f sourceFlags, cfg *config.Config, logger hclog.Logger, warn io.Writer) (*logSource, error) {
	switch {
	case f.file != "":
		file, err := incident.OpenFile(f.file, warn)
		if err != nil {
			return nil, err
		}
		return &logSource{log: file.Log(), what: f.file}, nil
	case f.nats != "":
		return openReader(ctx, eventlog.ReaderOptions{NatsURL: f.nats, CredsFile: f.creds, Logger: logger}, "NATS at "+redact.URLs(f.nats))
	case cfg != nil:
		return openConfigSource(ctx, cfg, logger)
	}
	return nil, errors.New("say where the log is: -config FILE, -nats URL or -file F")
}

// openConfigSource finds the log through the config: the external NATS
// of events.nats_url; else the running router's events.listen; else a
// copy of events.store_dir (file storage), which works whether or not a
// router runs on it.
func openConfigSource(ctx context.Context, cfg *config.Config, logger hclog.Logger) (*logSource, error) {
	e := cfg.Events
	if e.NATSURL != "" {
		return openReader(ctx, eventlog.ReaderOptions{NatsURL: e.NATSURL, CredsFile: e.CredsFile, Logger: logger}, "events.nats_url")
	}
	if e.Listen != "" {
		pctx, cancel := context.WithTimeout(ctx, listenProbeTimeout)
		src, err := openReader(pctx, eventlog.ReaderOptions{NatsURL: listenURL(e.Listen), Logger: logger}, "events.listen "+e.Listen)
		cancel()
		if err == nil {
			return src, nil
		}
		if e.Storage != streamspec.StorageFile {
			return nil, fmt.Errorf("no router answers on events.listen %s and events.storage is %s, so there is no log to read: %w", e.Listen, e.Storage, err)
		}
		logger.Debug("no router on events.listen; reading a copy of the store", "listen", e.Listen, "error", err)
	}
	if e.Storage != streamspec.StorageFile {
		return nil, fmt.Errorf("events.storage is %s: the log lives only in the running router's memory; set events.listen to read it, or use -nats", e.Storage)
	}
	return openReader(ctx, eventlog.ReaderOptions{StoreDir: e.StoreDir, Logger: logger}, "a copy of "+e.StoreDir)
}

// liveSource opens the log a follower needs: a NATS server, never a copy.
func liveSource(ctx context.Context, f sourceFlags, cfg *config.Config, logger hclog.Logger) (*logSource, error) {
	switch {
	case f.nats != "":
		return openReader(ctx, eventlog.ReaderOptions{NatsURL: f.nats, CredsFile: f.creds, Logger: logger}, "NATS at "+redact.URLs(f.nats))
	case cfg == nil:
		return nil, errors.New("say where the live log is: -config FILE or -nats URL")
	case cfg.Events.NATSURL != "":
		return openReader(ctx, eventlog.ReaderOptions{NatsURL: cfg.Events.NATSURL, CredsFile: cfg.Events.CredsFile, Logger: logger}, "events.nats_url")
	case cfg.Events.Listen != "":
		return openReader(ctx, eventlog.ReaderOptions{NatsURL: listenURL(cfg.Events.Listen), Logger: logger}, "events.listen "+cfg.Events.Listen)
	}
	return nil, errors.New("the config's log is embedded and not reachable from outside the router: set events.listen (or use events.nats_url), or give -nats URL")
}

func openReader(ctx context.Context, o eventlog.ReaderOptions, what string) (*logSource, error) {
	r, err := eventlog.OpenReader(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("open the log (%s): %w", what, err)
	}
	rl := readerLog{r: r, what: what}
	return &logSource{log: &incident.Log{Source: rl, Checkpoints: rl, Index: rl, Name: what}, reader: r, what: what}, nil
}

// listenURL is the URL a local client reaches events.listen at: an
// unspecified host (all interfaces) is reached on loopback.
func listenURL(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "nats://" + listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "nats://" + net.JoinHostPort(host, port)
}

// close closes the log's reader; a file needs no closing.
func (s *logSource) close() {
	if s.reader != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.reader.Close(ctx)
	}
}
