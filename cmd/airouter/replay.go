package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/incident"
)

// runReplay reads a log and prints a timeline of it, its events as JSONL,
// or the JSON a view served at a moment.
//
//	airouter replay -config FILE [-since T] [-until T] [-credential C] [-model M] [-kind K] [-format text|jsonl]
//	airouter replay -file incident.jsonl ...
//	airouter replay -config FILE -at 2026-11-29T03:12:00Z -view health
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newLogFlags("replay", logFlagsFor{file: true, window: true, pair: true}, stderr,
		"usage: airouter replay (-config FILE | -nats URL | -file F) [filters] [-format text|jsonl]",
		"       airouter replay (-config FILE | -nats URL | -file F) -at T -view bans|health|state|policy")
	format := fs.String("format", "text", "`text` for a timeline, jsonl for one event a line (the export format)")
	at := fs.String("at", "", "print a view as the router served it at `T` (RFC 3339, or a duration back from now)")
	view := fs.String("view", "", "the view -at prints: `bans` (/api/bans), health (/health), state (everything the log determines) or policy (the ban policy in force, as JSON); default health")
	if err := fs.parse(args); err != nil {
		return err
	}
	cfg, err := fs.src.loadConfig()
	if err != nil {
		return err
	}
	r := replayRun{sf: fs.src, cfg: cfg, logger: toolLogger(stderr), now: time.Now(), stdout: stdout, stderr: stderr}
	if *at != "" || *view != "" {
		if fs.filter.given() {
			return errors.New("replay: -at shows the whole state at one moment; -since, -until, -credential, -model and -kind do not apply")
		}
		return r.view(ctx, *at, *view)
	}
	return r.timeline(ctx, fs.filter, *format)
}

// replayRun is one replay invocation after its flags are parsed.
type replayRun struct {
	sf             sourceFlags
	cfg            *config.Config // -config's, or nil
	logger         hclog.Logger
	now            time.Time
	stdout, stderr io.Writer
}

// view prints the view named by -view as the router served it at -at.
func (r replayRun) view(ctx context.Context, at, view string) error {
	moment, err := incident.ParseMoment(at, r.now)
	if err != nil {
		return fmt.Errorf("-at: %w", err)
	}
	if moment.IsZero() {
		moment = r.now.UTC()
	}
	v := incident.View(view)
	if v == "" {
		v = incident.ViewHealth
	}
	if !v.Valid() {
		return fmt.Errorf("-view %q: want bans, health, state or policy", view)
	}
	src, err := openSource(ctx, r.sf, r.cfg, r.logger, r.stderr)
	if err != nil {
		return err
	}
	defer src.close()
	if r.cfg == nil && v == incident.ViewHealth {
		fmt.Fprintln(r.stderr, "note: without -config the health view lists the credentials the log names; types, weights, limits and unused credentials come from the config")
	}
	return incident.PrintView(ctx, src.log, adminViews{cfg: r.cfg}, moment, v, r.stdout)
}

// timeline prints the filtered log as a timeline or as JSONL.
func (r replayRun) timeline(ctx context.Context, ff filterFlags, format string) error {
	filter, err := ff.build(r.now)
	if err != nil {
		return err
	}
	var sink incident.Sink
	var tl *incident.Timeline
	switch format {
	case "text":
		tl = incident.NewTimeline(r.stdout, filter)
		sink = tl
	case "jsonl":
		sink = incident.NewJSONL(r.stdout, filter)
	default:
		return fmt.Errorf("-format %q: want text or jsonl", format)
	}
	src, err := openSource(ctx, r.sf, r.cfg, r.logger, r.stderr)
	if err != nil {
		return err
	}
	defer src.close()
	err = incident.Copy(ctx, src.log, 0, filter, sink)
	if tl != nil && tl.Unreadable() > 0 {
		fmt.Fprintf(r.stderr, "note: %d events this version cannot read were skipped (a newer airouter wrote them?)\n", tl.Unreadable())
	}
	return err
}
