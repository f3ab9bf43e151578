package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/transport/eventlog"
)

// errStop ends a walk over the log early without an error.
var errStop = errors.New("stop reading")

// listenProbeTimeout bounds the attempt to reach a router's events.listen
// before replay falls back to a copy of its store directory.
const listenProbeTimeout = 2 * time.Second

// sourceFlags are the flags that say where a log subcommand reads the log.
type sourceFlags struct {
	config string
	nats   string
	creds  string
	file   string
}

// register adds the flags; withFile adds -file too.
func (f *sourceFlags) register(fs *flag.FlagSet, withFile bool) {
	fs.StringVar(&f.config, "config", "", "read the log the config `FILE` names (its events.nats_url, events.listen or a copy of events.store_dir)")
	fs.StringVar(&f.nats, "nats", "", "read the log on the NATS server at `URL`")
	fs.StringVar(&f.creds, "creds", "", "NATS credentials `FILE` for -nats")
	if withFile {
		fs.StringVar(&f.file, "file", "", "read an exported JSONL `FILE` (no router or NATS needed)")
	}
}

// loadConfig loads -config, or returns nil when it is not given.
func (f *sourceFlags) loadConfig() (*config.Config, error) {
	if f.config == "" {
		return nil, nil
	}
	return config.Load(f.config)
}

// logSource is where a log subcommand reads events: a Reader over NATS or
// over a copy of a store directory, or an exported file.
type logSource struct {
	reader *eventlog.Reader // nil for a file
	file   string
	// what names the source in messages.
	what string
	// warn receives notes: a log that starts after position 1, a file's
	// unreadable lines.
	warn io.Writer
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
	src, err := pickSource(ctx, f, cfg, logger)
	if err != nil {
		return nil, err
	}
	src.warn = warn
	return src, nil
}

func pickSource(ctx context.Context, f sourceFlags, cfg *config.Config, logger hclog.Logger) (*logSource, error) {
	switch {
	case f.file != "":
		if _, err := os.Stat(f.file); err != nil {
			return nil, fmt.Errorf("read the exported log: %w", err)
		}
		return &logSource{file: f.file, what: f.file}, nil
	case f.nats != "":
		return openReader(ctx, eventlog.ReaderOptions{NatsURL: f.nats, CredsFile: f.creds, Logger: logger}, "NATS at "+eventlog.RedactURLs(f.nats))
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
		if e.Storage != config.StorageFile {
			return nil, fmt.Errorf("no router answers on events.listen %s and events.storage is %s, so there is no log to read: %w", e.Listen, e.Storage, err)
		}
		logger.Debug("no router on events.listen; reading a copy of the store", "listen", e.Listen, "error", err)
	}
	if e.Storage != config.StorageFile {
		return nil, fmt.Errorf("events.storage is %s: the log lives only in the running router's memory; set events.listen to read it, or use -nats", e.Storage)
	}
	return openReader(ctx, eventlog.ReaderOptions{StoreDir: e.StoreDir, Logger: logger}, "a copy of "+e.StoreDir)
}

// liveSource opens the log a follower needs: a NATS server, never a copy.
func liveSource(ctx context.Context, f sourceFlags, cfg *config.Config, logger hclog.Logger) (*logSource, error) {
	switch {
	case f.nats != "":
		return openReader(ctx, eventlog.ReaderOptions{NatsURL: f.nats, CredsFile: f.creds, Logger: logger}, "NATS at "+eventlog.RedactURLs(f.nats))
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
	return &logSource{reader: r, what: what}, nil
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

func (s *logSource) close() {
	if s.reader != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.reader.Close(ctx)
	}
}

// events calls fn for every event from sequence from on, in log order,
// until the end of the log as it was when the walk began. Unusable events
// arrive as events with an empty Kind and only Seq set, as from
// eventlog.Read. fn returning errStop ends the walk without an error.
//
// A walk from the start of a log whose first event is not at position 1
// (older events were discarded by the stream's limits, or a file is an
// export of a window) notes it: state from before then is missing.
func (s *logSource) events(ctx context.Context, from uint64, fn func(domain.Event) error) error {
	first := from <= 1
	walk := func(ev domain.Event) error {
		if first {
			first = false
			if ev.Seq > 1 && s.warn != nil {
				fmt.Fprintf(s.warn, "note: %s starts at log position %d: state from before it (counters, bans imposed earlier) is not included\n", s.what, ev.Seq)
			}
		}
		return fn(ev)
	}
	var err error
	if s.reader != nil {
		err = s.reader.Read(ctx, from, 0, func(ev domain.Event, _ uint64) error { return walk(ev) })
	} else {
		err = s.fileEvents(from, walk)
	}
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// fileEvents reads an exported file. Lines that are not JSON are skipped
// and counted in a note.
func (s *logSource) fileEvents(from uint64, fn func(domain.Event) error) error {
	f, err := os.Open(s.file)
	if err != nil {
		return fmt.Errorf("read the exported log: %w", err)
	}
	defer f.Close()
	r := newLineReader(f)
	for {
		ev, err := r.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", s.file, err)
		}
		if ev.Seq != 0 && ev.Seq < from {
			continue
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if r.bad > 0 && s.warn != nil {
		fmt.Fprintf(s.warn, "note: %s: %d lines are not JSON and were skipped (the first is line %d)\n", s.file, r.bad, r.firstBad)
	}
	return nil
}

// checkpoints are the source's stored projection checkpoints; a file has
// none.
func (s *logSource) checkpoints(ctx context.Context) ([]eventlog.Checkpoint, error) {
	if s.reader == nil {
		return nil, nil
	}
	return s.reader.Checkpoints(ctx)
}

// seqAt is where a walk for events from time t may start: the first event
// stored at or after t less seekMargin (a file is read from its start).
func (s *logSource) seqAt(ctx context.Context, t time.Time) (uint64, error) {
	if s.reader == nil || t.IsZero() {
		return 0, nil
	}
	return s.reader.SeqAt(ctx, t.Add(-seekMargin))
}

// seekMargin covers the difference between an event's own time and the
// time the server stored it (a replica's clock running ahead of the
// server's): a walk from time t starts at events stored a minute before t,
// and one up to time u stops at the first event stamped a minute after u.
const seekMargin = time.Minute
