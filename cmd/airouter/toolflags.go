package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/incident"
)

// logFlags is the flag set of a log subcommand: its usage, where it reads
// the log and which events it picks.
type logFlags struct {
	*flag.FlagSet
	src    sourceFlags
	filter filterFlags
}

// logFlagsFor says which of the shared flags a log subcommand takes: -file,
// the window (-since, -until), and the pair and kinds (-credential, -model,
// -kind).
type logFlagsFor struct {
	file, window, pair bool
}

// newLogFlags builds the flag set of subcommand name, whose usage lines are
// printed above the flags' defaults on stderr.
func newLogFlags(name string, want logFlagsFor, stderr io.Writer, usage ...string) *logFlags {
	f := &logFlags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
	f.SetOutput(stderr)
	f.Usage = func() {
		for _, line := range usage {
			fmt.Fprintln(stderr, line)
		}
		f.PrintDefaults()
	}
	f.src.register(f.FlagSet, want.file)
	f.filter.register(f.FlagSet, want.window, want.pair)
	return f
}

// parse parses args; a subcommand takes no positional arguments.
func (f *logFlags) parse(args []string) error {
	if err := f.Parse(args); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", f.Name(), f.Args())
	}
	return nil
}

// open builds the filter (relative times count back from now), loads
// -config and opens the log it names; the caller closes the source.
func (f *logFlags) open(ctx context.Context, now time.Time, stderr io.Writer) (*logSource, *config.Config, incident.Filter, error) {
	filter, err := f.filter.build(now)
	if err != nil {
		return nil, nil, filter, err
	}
	cfg, err := f.src.loadConfig()
	if err != nil {
		return nil, nil, filter, err
	}
	src, err := openSource(ctx, f.src, cfg, toolLogger(stderr), stderr)
	if err != nil {
		return nil, nil, filter, err
	}
	return src, cfg, filter, nil
}

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

// filterFlags are the flags that pick events: a time window, a credential,
// a model, kinds.
type filterFlags struct {
	since, until      string
	credential, model string
	kind              string
}

func (f *filterFlags) register(fs *flag.FlagSet, withTime, withPair bool) {
	if withTime {
		fs.StringVar(&f.since, "since", "", "only events at or after `T` (RFC 3339, or a duration back from now such as 2h)")
		fs.StringVar(&f.until, "until", "", "only events at or before `T` (RFC 3339, or a duration back from now)")
	}
	if withPair {
		fs.StringVar(&f.credential, "credential", "", "only events about credential `NAME`")
		fs.StringVar(&f.model, "model", "", "only events about model `ID`")
		fs.StringVar(&f.kind, "kind", "", "only events of these `KINDS`, comma-separated: outcome, ban, unban, cooldown, bench, unbench, withheld, shadow, settings (or full kinds such as ban.imposed)")
	}
}

// given reports whether any filter flag was set.
func (f *filterFlags) given() bool {
	return f.since != "" || f.until != "" || f.credential != "" || f.model != "" || f.kind != ""
}

// build turns the flags into a filter; relative times count back from now.
func (f *filterFlags) build(now time.Time) (incident.Filter, error) {
	var ef incident.Filter
	var err error
	if ef.Since, err = incident.ParseMoment(f.since, now); err != nil {
		return ef, fmt.Errorf("-since: %w", err)
	}
	if ef.Until, err = incident.ParseMoment(f.until, now); err != nil {
		return ef, fmt.Errorf("-until: %w", err)
	}
	if !ef.Since.IsZero() && !ef.Until.IsZero() && ef.Until.Before(ef.Since) {
		return ef, fmt.Errorf("-until %s is before -since %s", incident.Stamp(ef.Until), incident.Stamp(ef.Since))
	}
	ef.Credential, ef.Model = strings.TrimSpace(f.credential), strings.TrimSpace(f.model)
	if ef.Kinds, err = incident.ParseKinds(f.kind); err != nil {
		return ef, fmt.Errorf("-kind: %w", err)
	}
	return ef, nil
}
