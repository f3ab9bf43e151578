package whatif

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/airouter/airouter/domain"
)

// Over logs whose recorded policy changes mid-way (policy.changed, as a
// replica starting with another file announces it), the actual run is as
// recorded, and the proposed run decides under the proposed policy
// throughout: its bans are those of the same traffic recorded under the
// proposed policy from the start.
func TestARecordedPolicyChangeDoesNotChangeTheProposedPolicy(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		before, after, proposed := genPolicy(t), genPolicy(t), genPolicy(t)
		input := genInput(t, nil)
		cut := rapid.IntRange(0, len(input)).Draw(t, "change at")
		change := domain.NewPolicyChange(after, "r2")
		announce := domain.Event{V: domain.SchemaVersion, Kind: domain.KindPolicyChanged, ID: "policy/r2", Policy: &change}
		changed := newRecorder(before)
		for i, ev := range input {
			if i == cut {
				announce.At = ev.At
				changed.record(announce)
			}
			changed.record(ev)
		}
		throughout := newRecorder(proposed)
		for _, ev := range input {
			throughout.record(ev)
		}
		got := runLog(t, Options{Policy: proposed}, changed.log)
		want := runLog(t, Options{Policy: proposed}, throughout.log)
		if g, w := bansText(got.Proposed.Bans), bansText(want.Actual.Bans); g != w {
			t.Fatalf("the proposed run followed the recorded policy change:\ngot %s\nwant %s", g, w)
		}
		asRecorded := runLog(t, Options{Policy: before}, changed.log)
		if g, w := bansText(got.Actual.Bans), bansText(asRecorded.Actual.Bans); g != w {
			t.Fatalf("the actual run depends on the proposed policy:\ngot %s\nwant %s", g, w)
		}
	})
}
