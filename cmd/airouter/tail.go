package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/transport/eventlog"
)

// runTail follows the live log and prints each new event as it is stored,
// until interrupted.
//
//	airouter tail -config FILE [-bans] [-credential C] [-model M] [-kind K] [-format text|jsonl]
//	airouter tail -nats URL -bans
func runTail(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tail", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airouter tail (-config FILE | -nats URL) [-bans] [filters] [-format text|jsonl]")
		fs.PrintDefaults()
	}
	var sf sourceFlags
	sf.register(fs, false)
	var ff filterFlags
	ff.register(fs, false, true)
	bans := fs.Bool("bans", false, "only ban and unban events (subjects airouter.events.ban.> and airouter.events.unban.>)")
	format := fs.String("format", "text", "`text` (one line an event) or jsonl (the export format)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("tail: unexpected arguments %q", fs.Args())
	}
	filter, err := ff.build(time.Now())
	if err != nil {
		return err
	}
	var sink eventSink
	switch *format {
	case "text":
		tl := newTimeline(stdout, filter)
		tl.perOutcome = true
		sink = tl
	case "jsonl":
		sink = newJSONLSink(stdout, filter)
	default:
		return fmt.Errorf("-format %q: want text or jsonl", *format)
	}
	cfg, err := sf.loadConfig()
	if err != nil {
		return err
	}
	src, err := liveSource(ctx, sf, cfg, toolLogger(stderr))
	if err != nil {
		return err
	}
	defer src.close()
	return follow(ctx, src, *bans, sink, func() {
		fmt.Fprintf(stderr, "following %s; stop with Ctrl-C\n", src.what)
	})
}

// follow feeds the events stored from now on to sink until ctx ends or a
// write fails; ready runs once the subscription is in place.
func follow(ctx context.Context, src *logSource, bansOnly bool, sink eventSink, ready func()) error {
	var subjects []string
	if bansOnly {
		subjects = eventlog.BanSubjects()
	}
	failed := make(chan error, 1)
	stop, err := src.reader.Follow(ctx, subjects, func(ev domain.Event, pending uint64) {
		err := sink.add(ev)
		if err == nil && pending == 0 {
			err = sink.flush()
		}
		if err != nil {
			select {
			case failed <- err:
			default:
			}
		}
	})
	if err != nil {
		return fmt.Errorf("follow the log (%s): %w", src.what, err)
	}
	ready()
	select {
	case <-ctx.Done():
		err = nil
	case err = <-failed:
	}
	stop()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return errors.Join(err, sink.finish())
}
