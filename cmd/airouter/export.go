package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/domain"
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
	from, err := src.seqAt(ctx, filter.since)
	if err != nil {
		return err
	}
	sink := newJSONLSink(stdout, filter)
	err = src.events(ctx, from, func(ev domain.Event) error {
		if ev.Kind != "" && filter.past(ev) {
			return errStop
		}
		return sink.add(ev)
	})
	return errors.Join(err, sink.finish())
}

// jsonlSink writes the events a filter keeps as export lines. An event this
// version could not read (no time, no kind) is written when no credential,
// model or kind filter is set and the event before it was in the time
// window, so an export keeps the log's positions.
type jsonlSink struct {
	w      *bufio.Writer
	keep   eventFilter
	inside bool
	buf    []byte
	err    error
}

func newJSONLSink(w io.Writer, keep eventFilter) *jsonlSink {
	return &jsonlSink{w: bufio.NewWriterSize(w, 64<<10), keep: keep, inside: keep.since.IsZero()}
}

func (s *jsonlSink) add(ev domain.Event) error {
	if s.err != nil {
		return s.err
	}
	if ev.Kind == "" {
		if !s.inside || s.keep.credential != "" || s.keep.model != "" || s.keep.kinds != nil {
			return nil
		}
	} else {
		s.inside = (s.keep.since.IsZero() || !ev.At.Before(s.keep.since)) && (s.keep.until.IsZero() || !ev.At.After(s.keep.until))
		if !s.keep.match(ev) {
			return nil
		}
	}
	s.buf, s.err = appendExportLine(s.buf[:0], ev)
	if s.err == nil {
		_, s.err = s.w.Write(s.buf)
	}
	return s.err
}

func (s *jsonlSink) flush() error {
	if err := s.w.Flush(); err != nil && s.err == nil {
		s.err = err
	}
	return s.err
}

func (s *jsonlSink) finish() error { return s.flush() }

// toolLogger is the log subcommands' logger: warnings and errors on stderr.
func toolLogger(stderr io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "airouter", Level: hclog.Warn, Output: stderr})
}
