package incident

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/airouter/airouter/domain"
)

// File is an exported JSONL file as a Source. It keeps no checkpoints and
// has no time index: a walk reads it from its start.
type File struct {
	path  string
	notes io.Writer
}

// OpenFile checks that the exported file at path can be read. Notes on its
// lines that are not JSON go to notes (nil drops them).
func OpenFile(path string, notes io.Writer) (*File, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("read the exported log: %w", err)
	}
	return &File{path: path, notes: notes}, nil
}

// Log is the file as the Log the tools read, named by its path.
func (f *File) Log() *Log {
	return &Log{Source: f, Name: f.path, Notes: f.notes}
}

// Events reads the file from its start and calls fn for the events from
// sequence from on. Lines that are not JSON are skipped and counted in a
// note.
func (f *File) Events(_ context.Context, from uint64, fn func(domain.Event) error) error {
	file, err := os.Open(f.path)
	if err != nil {
		return fmt.Errorf("read the exported log: %w", err)
	}
	defer file.Close()
	r := NewLineReader(file)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", f.path, err)
		}
		if ev.Seq != 0 && ev.Seq < from {
			continue
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if bad, first := r.NotJSON(); bad > 0 && f.notes != nil {
		fmt.Fprintf(f.notes, "note: %s: %d lines are not JSON and were skipped (the first is line %d)\n", f.path, bad, first)
	}
	return nil
}
