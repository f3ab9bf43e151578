package main

import (
	"context"
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
	fs := newLogFlags("export", logFlagsFor{window: true}, stderr,
		"usage: airouter export (-config FILE | -nats URL) [-since T] [-until T] > FILE.jsonl")
	if err := fs.parse(args); err != nil {
		return err
	}
	src, _, filter, err := fs.open(ctx, time.Now(), stderr)
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
