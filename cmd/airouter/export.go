package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/airouter/airouter/incident"
)

// runExport writes a window of the log as JSONL to stdout, to attach to a
// ticket; `replay -file` reads it anywhere.
//
//	airouter export -config FILE [-since T] [-until T] > incident.jsonl
//	airouter export -nats URL [-since T] [-until T]
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airouter export (-config FILE | -nats URL) [-since T] [-until T] > FILE.jsonl")
		fs.PrintDefaults()
	}
	var sf sourceFlags
	sf.register(fs, false)
	var ff filterFlags
	ff.register(fs, true, false)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("export: unexpected arguments %q", fs.Args())
	}
	filter, err := ff.build(time.Now())
	if err != nil {
		return err
	}
	cfg, err := sf.loadConfig()
	if err != nil {
		return err
	}
	src, err := openSource(ctx, sf, cfg, toolLogger(stderr), stderr)
	if err != nil {
		return err
	}
	defer src.close()
	from, err := src.log.SeqSince(ctx, filter.Since)
	if err != nil {
		return err
	}
	return incident.Copy(ctx, src.log, from, filter, incident.NewJSONL(stdout, filter))
}
