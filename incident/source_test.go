package incident

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// events is a log held in memory: a Source, and a CheckpointStore of the
// checkpoints it is given.
type events struct {
	evs   []domain.Event
	ckpts []Checkpoint
}

func (s *events) Events(_ context.Context, from uint64, fn func(domain.Event) error) error {
	for _, ev := range s.evs {
		if ev.Seq < from {
			continue
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	return nil
}

func (s *events) Checkpoints(context.Context) ([]Checkpoint, error) { return s.ckpts, nil }

// memLog is evs as a Log with checkpoints, its notes written to notes.
func memLog(evs []domain.Event, ckpts []Checkpoint, notes *bytes.Buffer) *Log {
	src := &events{evs: evs, ckpts: ckpts}
	l := &Log{Source: src, Checkpoints: src, Name: "the test log"}
	if notes != nil {
		l.Notes = notes
	}
	return l
}

// incidentT0 is the start of the made-up incident the timeline tests read.
var incidentT0 = time.Date(2026, 11, 29, 3, 11, 23, 0, time.UTC)

func outcomeAt(d time.Duration, cred string, status int, latency int64) domain.Event {
	class := domain.ClassifyStatus(status)
	return domain.Event{V: 1, Kind: domain.KindOutcomeRecorded, At: incidentT0.Add(d),
		Outcome: &domain.Outcome{Credential: cred, Model: "gpt-4o", Status: status, Class: class, LatencyMS: latency, Attempt: 1}}
}

// incidentEvents is a small incident: traffic, three 429s that ban
// cred-a, an admin ban and unban of cred-b, a cooldown, a bench, an expiry,
// a settings change, and a message this version cannot read.
func incidentEvents() []domain.Event {
	until := incidentT0.Add(42*time.Second + 5*time.Minute)
	adminUntil := incidentT0.Add(2*time.Minute + 30*time.Minute)
	evs := []domain.Event{
		outcomeAt(0, "cred-a", 200, 200),
		outcomeAt(time.Second, "cred-a", 429, 90),
		outcomeAt(2*time.Second, "cred-b", 200, 210),
		outcomeAt(3*time.Second, "cred-b", 200, 230),
		outcomeAt(20*time.Second, "cred-a", 429, 80),
		outcomeAt(42*time.Second, "cred-a", 429, 70),
		{V: 1, Kind: domain.KindBanImposed, ID: "f2b/cred-a/gpt-4o/6", At: incidentT0.Add(42 * time.Second),
			Ban: &domain.Ban{Credential: "cred-a", Model: "gpt-4o", Origin: domain.OriginFail2Ban,
				Reason: "3 x 429 (rule 429: max_attempts 3, ban 5m)", ErrorCode: 429,
				Since: incidentT0.Add(42 * time.Second), Until: &until, Failures: 3, CauseSeq: 6}},
		outcomeAt(50*time.Second, "cred-b", 200, 190),
		{V: 1, Kind: domain.KindCooldownStarted, ID: "cooldown/cred-b/gpt-4o/9", At: incidentT0.Add(61 * time.Second),
			Cooldown: &domain.Cooldown{Credential: "cred-b", Model: "gpt-4o", Until: incidentT0.Add(91 * time.Second), Status: 429, CauseSeq: 9}},
		{V: 1, Kind: domain.KindBanImposed, ID: "admin/1", At: incidentT0.Add(2 * time.Minute),
			Ban: &domain.Ban{Credential: "cred-b", Model: "*", Origin: domain.OriginAdmin, Reason: "admin: air-scaler drain",
				Since: incidentT0.Add(2 * time.Minute), Until: &adminUntil}},
		{V: 1, Kind: domain.KindModelBenched, ID: "bench/gpt-4o/12", At: incidentT0.Add(150 * time.Second),
			Bench: &domain.Bench{Model: "gpt-4o", Until: incidentT0.Add(150*time.Second + 10*time.Minute), Failures: 3,
				Credentials: []string{"cred-a", "cred-c"}, Reason: "3 failures on 2 credentials within 15m (last: 502)"}},
		{V: 1, Kind: domain.KindBanLifted, ID: "admin/2", At: incidentT0.Add(3 * time.Minute),
			Unban: &domain.Unban{Credential: "cred-b", By: domain.LiftedByAdmin}},
		{V: 1, Kind: domain.KindBanLifted, ID: "expiry/f2b/cred-a/gpt-4o/6", At: until,
			Unban: &domain.Unban{Credential: "cred-a", Model: "gpt-4o", By: domain.LiftedByExpiry, BanID: "f2b/cred-a/gpt-4o/6"}},
		{V: 1, Kind: domain.KindFallbackSettingsChanged, ID: "admin/3", At: until.Add(time.Second),
			Settings: &domain.FallbackSettings{MaxHops: 3, TimeBudget: domain.Duration(45 * time.Second)}},
	}
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
	}
	// seq 15: a message this version cannot read.
	return append(evs, domain.Event{Seq: uint64(len(evs) + 1)})
}

// writeExport writes events as an exported file and returns its path.
func writeExport(t *testing.T, evs []domain.Event) string {
	t.Helper()
	var b []byte
	for _, ev := range evs {
		var err error
		if b, err = AppendLine(b, ev); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "incident.jsonl")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// openExport opens an exported file as a Log, its notes written to notes.
func openExport(t *testing.T, path string, notes *bytes.Buffer) *Log {
	t.Helper()
	var w io.Writer
	if notes != nil {
		w = notes
	}
	f, err := OpenFile(path, w)
	if err != nil {
		t.Fatal(err)
	}
	return f.Log()
}
