package whatif

import (
	"bytes"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// recoveryLog records, under max_attempts 1, permanent bans and recovery
// probes after probe_after 1m, a pair banned by a 503 whose recorded probe
// succeeded a minute later, then served again; a second credential serves
// throughout.
func recoveryLog(t *testing.T) []domain.Event {
	t.Helper()
	rec := newRecorder(recoveryPolicyOf(time.Minute))
	for _, o := range []struct {
		at     time.Duration
		cred   string
		status int
	}{{0, "a", 503}, {time.Second, "b", 200}, {time.Minute, "a", 200}, {2 * time.Minute, "b", 200}, {6 * time.Minute, "a", 200}} {
		rec.record(domain.Event{V: domain.SchemaVersion, Kind: domain.KindOutcomeRecorded, At: t0.Add(o.at),
			Outcome: &domain.Outcome{Credential: o.cred, Model: "m1", Status: o.status, Class: domain.ClassifyStatus(o.status), Attempt: 1}})
	}
	lifts := 0
	for _, ev := range rec.log {
		if ev.Kind == domain.KindBanLifted && ev.Unban.By == domain.LiftedByRecovery {
			lifts++
		}
	}
	if lifts != 1 {
		t.Fatalf("the recorded log holds %d lifts by recovery, want 1", lifts)
	}
	return rec.log
}

// recoveryPolicyOf bans for good on the first 503 and probes after
// probeAfter (0: no probes).
func recoveryPolicyOf(probeAfter time.Duration) domain.BanPolicy {
	return domain.BanPolicy{
		Default:  domain.Rule{MaxAttempts: 1, Permanent: true},
		Codes:    []int{503},
		Recovery: domain.RecoveryPolicy{ProbeAfter: probeAfter, ProbeMax: 30 * time.Minute},
	}
}

// Recorded recovery lifts are decisions of the recorded policy: under it
// the answer is empty; without probes the ban is never lifted; with a
// later probe_after the recorded success a minute in was not a probe the
// proposed router would have sent, and the ban ends at the first recorded
// success after its own probe was due.
func TestWhatifRecoveryGolden(t *testing.T) {
	evs := recoveryLog(t)
	for _, tc := range []struct {
		name  string
		probe time.Duration
		check func(t *testing.T, res Result)
	}{
		{"recovery-recorded", time.Minute, func(t *testing.T, res Result) {
			if !res.Diff.Empty() {
				t.Errorf("the recorded policy changes bans: %+v", res.Diff)
			}
		}},
		{"recovery-off", 0, func(t *testing.T, res Result) {
			if len(res.Diff.Changed) != 1 || len(res.Proposed.Bans) != 1 || res.Proposed.Bans[0].Lifted != nil {
				t.Errorf("without probes the ban is lifted: %+v", res.Proposed.Bans)
			}
		}},
		{"recovery-later", 5 * time.Minute, func(t *testing.T, res Result) {
			b := res.Proposed.Bans
			if len(b) != 1 || b[0].Lifted == nil || !b[0].Lifted.Equal(t0.Add(6*time.Minute)) {
				t.Errorf("with probe_after 5m the ban is not lifted at the success 6m in: %+v", b)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runLog(t, Options{Policy: recoveryPolicyOf(tc.probe)}, evs)
			tc.check(t, res)
			var txt bytes.Buffer
			if err := res.WriteText(&txt); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".golden.txt", txt.Bytes())
		})
	}
}
