package incident

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// The export format round-trips: every event, the unreadable one as a
// bare seq, lines without a seq numbered on, and lines that are not JSON
// skipped with a note.
func TestExportLinesRoundTrip(t *testing.T) {
	evs := incidentEvents()
	file := writeExport(t, evs)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte(`{"seq":1,"v":1,"kind":"outcome.recorded","at":"2026-11-29T03:11:23Z"`)) {
		t.Fatalf("first line: %.120s", data)
	}
	if !bytes.HasSuffix(data, []byte("\n{\"seq\":15}\n")) {
		t.Fatalf("the unreadable event is not a bare seq: %q", data[len(data)-40:])
	}
	extra := "not json\n" + `{"v":1,"kind":"ban.lifted","at":"2026-11-29T04:00:00Z","unban":{"credential":"cred-a","by":"admin"}}` + "\n"
	data = append(data, extra...)
	r := NewLineReader(bytes.NewReader(data))
	var got []domain.Event
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		got = append(got, ev)
	}
	if bad, first := r.NotJSON(); len(got) != len(evs)+1 || bad != 1 || first != len(evs)+1 {
		t.Fatalf("read %d events, %d bad lines (first %d)", len(got), bad, first)
	}
	for i, ev := range evs {
		a, _ := AppendLine(nil, ev)
		b, _ := AppendLine(nil, got[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("event %d:\n%s\nread back as\n%s", i, a, b)
		}
	}
	if last := got[len(got)-1]; last.Seq != uint64(len(evs)+1) || last.Kind != domain.KindBanLifted {
		t.Fatalf("a line without seq reads as %+v", last)
	}

	// Read as a file, the line that is not JSON is a note.
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var notes bytes.Buffer
	n := 0
	if err := openExport(t, file, &notes).Walk(t.Context(), 0, func(domain.Event) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != len(evs)+1 || !strings.Contains(notes.String(), ": 1 lines are not JSON and were skipped (the first is line 16)") {
		t.Fatalf("walked %d events; notes %q", n, notes.String())
	}
}

// Events inside an outcome batch keep their index through an export, and
// an unreadable one inside a batch is a bare position.
func TestExportLinesKeepBatchPositions(t *testing.T) {
	evs := incidentEvents()[:3]
	evs[0].Seq, evs[0].Index = 7, 0
	evs[1].Seq, evs[1].Index = 7, 1
	evs[2] = domain.Event{Seq: 7, Index: 2}
	var data []byte
	for _, ev := range evs {
		var err error
		if data, err = AppendLine(data, ev); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if !strings.HasPrefix(lines[0], `{"seq":7,"v":1,`) || !strings.HasPrefix(lines[1], `{"seq":7,"index":1,"v":1,`) ||
		lines[2] != `{"seq":7,"index":2}` {
		t.Fatalf("export lines:\n%s", data)
	}
	r := NewLineReader(bytes.NewReader(data))
	for i, want := range evs {
		got, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if got.Pos() != want.Pos() || got.Kind != want.Kind {
			t.Fatalf("line %d read back at %v (%s), want %v (%s)", i, got.Pos(), got.Kind, want.Pos(), want.Kind)
		}
	}
	// A line whose position is not first still gives it, through JSON.
	if p, ok := linePos([]byte(`{"v":1,"index":3,"seq":9}`)); !ok || p != (domain.Pos{Seq: 9, Index: 3}) {
		t.Fatalf("linePos = %v %v", p, ok)
	}
}

// A JSONL export of a window keeps the events stamped inside it, and the
// unreadable events that follow one of them (so the positions stay as in
// the log) unless the filter picks events by what they are about.
func TestJSONLKeepsTheWindowAndItsPositions(t *testing.T) {
	evs := incidentEvents()
	window := Filter{Since: incidentT0.Add(2 * time.Minute), Until: evs[len(evs)-2].At}
	seqs := func(keep Filter) []uint64 {
		var out bytes.Buffer
		if err := Copy(t.Context(), memLog(evs, nil, nil), 0, keep, NewJSONL(&out, keep)); err != nil {
			t.Fatal(err)
		}
		var got []uint64
		r := NewLineReader(&out)
		for {
			ev, err := r.Next()
			if err != nil {
				return got
			}
			got = append(got, ev.Seq)
		}
	}
	if got := seqs(window); len(got) != 6 || got[0] != 10 || got[5] != 15 {
		t.Fatalf("window exported seqs %v, want 10..15", got)
	}
	bans := window
	bans.Kinds = map[domain.Kind]bool{domain.KindBanImposed: true}
	if got := seqs(bans); len(got) != 1 || got[0] != 10 {
		t.Fatalf("window of bans exported seqs %v, want [10]", got)
	}
}

// A walk from the start of a log that begins after position 1 notes that
// earlier state is missing; Copy stops once past the window.
func TestWalkNotesALogThatStartsLate(t *testing.T) {
	evs := incidentEvents()[4:]
	var notes bytes.Buffer
	keep := Filter{Until: evs[0].At}
	n := 0
	sink := countSink{n: &n}
	if err := Copy(t.Context(), memLog(evs, nil, &notes), 0, keep, sink); err != nil {
		t.Fatal(err)
	}
	if want := "note: the test log starts at log position 5: state from before it (counters, bans imposed earlier) is not included\n"; notes.String() != want {
		t.Fatalf("notes %q, want %q", notes.String(), want)
	}
	// Events up to a minute past the window's end are read (stamps are
	// nearly in log order); the first one beyond stops the walk.
	if n != 5 {
		t.Fatalf("the walk read %d events, want 5 (up to the cooldown at +61 s)", n)
	}
	notes.Reset()
	if err := memLog(evs, nil, &notes).Walk(t.Context(), 6, func(domain.Event) error { return nil }); err != nil || notes.Len() != 0 {
		t.Fatalf("a walk from the middle: %v, notes %q", err, notes.String())
	}
}

// countSink counts the events it is given.
type countSink struct{ n *int }

func (c countSink) Add(domain.Event) error { *c.n++; return nil }
func (c countSink) Flush() error           { return nil }
func (c countSink) Finish() error          { return nil }
