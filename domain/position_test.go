package domain

import (
	"testing"
	"time"
)

func TestPositions(t *testing.T) {
	tests := []struct {
		p      Pos
		str    string
		resume uint64
	}{
		{Pos{}, "0", 0},
		{Pos{Seq: 41}, "41", 41},
		{Pos{Seq: 41, Index: 2}, "41.2", 41},
	}
	for _, tc := range tests {
		if got := tc.p.String(); got != tc.str {
			t.Errorf("%#v.String() = %q, want %q", tc.p, got, tc.str)
		}
		if got := tc.p.ResumeSeq(); got != tc.resume {
			t.Errorf("%v.ResumeSeq() = %d, want %d", tc.p, got, tc.resume)
		}
	}
	order := []Pos{{}, {Seq: 1}, {Seq: 1, Index: 1}, {Seq: 1, Index: 9}, {Seq: 2}, {Seq: 10, Index: 3}}
	for i, p := range order {
		for j, q := range order {
			if got := p.Before(q); got != (i < j) {
				t.Errorf("%v.Before(%v) = %v", p, q, got)
			}
		}
	}
	if !(Pos{}).IsZero() || (Pos{Index: 1}).IsZero() {
		t.Error("IsZero is wrong")
	}
	if got := (Event{Seq: 7, Index: 3}).Pos(); got != (Pos{Seq: 7, Index: 3}) {
		t.Errorf("Event.Pos() = %v", got)
	}
}

// Decisions caused by an outcome inside a batch name its full position.
func TestDecisionsNamePositionsInsideBatches(t *testing.T) {
	at := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	ev := Event{Kind: KindOutcomeRecorded, At: at, Seq: 9, Index: 2, Outcome: &Outcome{
		Credential: "a", Model: "m", Status: 429, Class: ClassRateLimited, RetryAfterMS: 30_000}}
	p := BanPolicy{Codes: []int{500}, Default: Rule{MaxAttempts: 3, Duration: time.Minute}}
	d := Decide(p, ev, Facts{Counts: map[int]int{429: 1}, Streak: Pos{Seq: 9, Index: 2}})
	if len(d) != 1 || d[0].ID != "cooldown/a/m/9.2" || d[0].Cooldown.CauseSeq != 9 || d[0].Cooldown.CauseIndex != 2 {
		t.Fatalf("decisions %+v, want the cooldown cooldown/a/m/9.2 caused at 9.2", d)
	}
	p = BanPolicy{Codes: []int{429}, Default: Rule{MaxAttempts: 3, Duration: time.Minute}}
	d = Decide(p, ev, Facts{Counts: map[int]int{429: 3}, Streak: Pos{Seq: 7, Index: 4}})
	if len(d) == 0 || d[0].ID != "f2b/a/m/7.4" || d[0].Ban.CauseSeq != 9 || d[0].Ban.CauseIndex != 2 {
		t.Fatalf("decisions %+v, want the ban f2b/a/m/7.4 caused at 9.2", d)
	}
}
