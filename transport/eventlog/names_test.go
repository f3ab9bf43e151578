package eventlog

import (
	"strings"
	"testing"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// Names of any length go through the real server: the connection stays up
// and the stored events carry the full names, though the subjects are
// shortened.
func TestLongNamesKeepTheConnection(t *testing.T) {
	l := openTest(t, Options{Storage: StorageMemory})
	long := strings.Repeat("m", 4096)
	cyrillic := strings.Repeat("я", 700)
	huge := strings.Repeat("x.", 30000)

	out := outcomeEvent(1)
	out.Outcome.Model = long
	if !l.Publish(out) {
		t.Fatal("Publish refused the outcome")
	}
	if err := l.Flush(testkit.Context(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	for i, model := range []string{cyrillic, huge} {
		ev := banEvent("ban-"+string(rune('a'+i)), "cred-"+strings.Repeat("c", 200), model)
		ev.V = domain.SchemaVersion
		if _, err := l.PublishControl(testkit.Context(t), ev); err != nil {
			t.Fatalf("PublishControl(%d-byte model): %v", len(model), err)
		}
	}
	if s := l.Stats(); !s.Connected || s.Failed != 0 {
		t.Fatalf("after long names: connected %v, failed %d, last error %q", s.Connected, s.Failed, s.LastError)
	}
	evs := readAll(t, l)
	if len(evs) != 3 || evs[0].Outcome == nil || evs[0].Outcome.Model != long ||
		evs[1].Ban == nil || evs[1].Ban.Model != cyrillic || evs[2].Ban == nil || evs[2].Ban.Model != huge {
		t.Fatalf("stored %d events, want the three with their full names", len(evs))
	}
}
