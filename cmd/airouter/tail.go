package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/airouter/airouter/incident"
)

// runTail follows the live log and prints each new event as it is stored,
// until interrupted.
//
//	airouter tail -config FILE [-bans] [-credential C] [-model M] [-kind K] [-format text|jsonl]
//	airouter tail -nats URL -bans
func runTail(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newLogFlags("tail", logFlagsFor{pair: true}, stderr,
		"usage: airouter tail (-config FILE | -nats URL) [-bans] [filters] [-format text|jsonl]")
	bans := fs.Bool("bans", false, "only ban and unban events (subjects airouter.events.ban.> and airouter.events.unban.>)")
	format := fs.String("format", "text", "`text` (one line an event) or jsonl (the export format)")
	if err := fs.parse(args); err != nil {
		return err
	}
	filter, err := fs.filter.build(time.Now())
	if err != nil {
		return err
	}
	var sink incident.Sink
	switch *format {
	case "text":
		sink = incident.NewLiveTimeline(stdout, filter)
	case "jsonl":
		sink = incident.NewJSONL(stdout, filter)
	default:
		return fmt.Errorf("-format %q: want text or jsonl", *format)
	}
	cfg, err := fs.src.loadConfig()
	if err != nil {
		return err
	}
	src, err := liveSource(ctx, fs.src, cfg, toolLogger(stderr))
	if err != nil {
		return err
	}
	defer src.close()
	return incident.Follow(ctx, readerLog{r: src.reader, what: src.what}, *bans, sink, func() {
		fmt.Fprintf(stderr, "following %s; stop with Ctrl-C\n", src.what)
	})
}
