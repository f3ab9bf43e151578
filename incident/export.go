package incident

import (
	"bufio"
	"io"

	"github.com/airouter/airouter/domain"
)

// JSONL writes the events a filter keeps as export lines. An event this
// version could not read (no time, no kind) is written when no credential,
// model or kind filter is set and the event before it was in the time
// window, so an export keeps the log's positions.
type JSONL struct {
	w      *bufio.Writer
	keep   Filter
	inside bool
	buf    []byte
	err    error
}

// NewJSONL writes the events keep passes to w, in the export format.
func NewJSONL(w io.Writer, keep Filter) *JSONL {
	return &JSONL{w: bufio.NewWriterSize(w, 64<<10), keep: keep, inside: keep.Since.IsZero()}
}

// Add writes ev when the filter keeps it.
func (s *JSONL) Add(ev domain.Event) error {
	if s.err != nil {
		return s.err
	}
	if ev.Kind == "" {
		if !s.inside || s.keep.picksEvents() {
			return nil
		}
	} else {
		s.inside = s.keep.inWindow(ev)
		if !s.keep.Match(ev) {
			return nil
		}
	}
	s.buf, s.err = AppendLine(s.buf[:0], ev)
	if s.err == nil {
		_, s.err = s.w.Write(s.buf)
	}
	return s.err
}

// Flush writes the buffered lines out.
func (s *JSONL) Flush() error {
	if err := s.w.Flush(); err != nil && s.err == nil {
		s.err = err
	}
	return s.err
}

// Finish writes what is pending and reports a write error.
func (s *JSONL) Finish() error { return s.Flush() }
