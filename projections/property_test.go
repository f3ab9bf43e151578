package projections

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/airouter/airouter/domain"
)

var (
	genCred  = rapid.SampledFrom([]string{"a", "b", "c"})
	genModel = rapid.SampledFrom([]string{"m1", "m2", "m3"})
	genBanID = rapid.SampledFrom([]string{"b1", "b2", "b3", "b4"})
	genDur   = rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 5 * time.Minute, time.Hour})
	genCode  = rapid.SampledFrom([]int{0, 200, 201, 400, 401, 403, 404, 408, 429, 500, 502, 503})
	genClass = rapid.SampledFrom([]domain.Class{
		"", domain.ClassOK, domain.ClassTimeout, domain.ClassConnection, domain.ClassCanceled,
		domain.ClassEmptyCompletion, domain.ClassModelNotFound, domain.ClassServerError,
	})
)

// genEvent draws any event, valid or not, on a small world of three
// credentials and three models so that keys collide often.
func genEvent(t *rapid.T, when time.Time) domain.Event {
	ev := domain.Event{V: domain.SchemaVersion, At: when}
	switch rapid.IntRange(0, 12).Draw(t, "kind") {
	case 0, 1, 2, 3, 4, 5:
		status := genCode.Draw(t, "status")
		class := genClass.Draw(t, "class")
		if class == "" {
			class = domain.ClassifyStatus(status)
		}
		ev.Kind = domain.KindOutcomeRecorded
		ev.Outcome = &domain.Outcome{Credential: genCred.Draw(t, "cred"), Model: genModel.Draw(t, "model"), Status: status, Class: class}
	case 6, 7:
		dur := genDur.Draw(t, "dur")
		ev.Kind, ev.ID = domain.KindBanImposed, genBanID.Draw(t, "id")
		ev.Ban = &domain.Ban{
			Credential: genCred.Draw(t, "cred"),
			Model:      rapid.SampledFrom([]string{"m1", "m2", "*", ""}).Draw(t, "model"),
			Origin:     rapid.SampledFrom([]domain.Origin{domain.OriginAdmin, domain.OriginFail2Ban}).Draw(t, "origin"),
			ErrorCode:  genCode.Draw(t, "code"), Since: when, Permanent: dur == 0,
		}
		if dur != 0 {
			ev.Ban.Until = ptime(when.Add(dur))
		}
	case 8:
		ev.Kind = domain.KindBanLifted
		ev.Unban = &domain.Unban{
			Credential: genCred.Draw(t, "cred"),
			Model:      rapid.SampledFrom([]string{"", "*", "m1", "m2"}).Draw(t, "model"),
			By:         rapid.SampledFrom([]domain.LiftedBy{domain.LiftedByAdmin, domain.LiftedByExpiry}).Draw(t, "by"),
			BanID:      genBanID.Draw(t, "banid"),
		}
	case 9:
		ev.Kind = domain.KindCooldownStarted
		ev.Cooldown = &domain.Cooldown{Credential: genCred.Draw(t, "cred"), Model: genModel.Draw(t, "model"),
			Until: when.Add(genDur.Draw(t, "dur")), Status: 429}
	case 10:
		ev.Kind = domain.KindModelBenched
		ev.Bench = &domain.Bench{Model: genModel.Draw(t, "model"), Until: when.Add(genDur.Draw(t, "dur")), Failures: 3, Reason: "r"}
	case 11:
		ev.Kind = domain.KindFallbackSettingsChanged
		ev.Settings = &domain.FallbackSettings{MaxHops: rapid.IntRange(0, 9).Draw(t, "hops")}
	default:
		ev.Kind = rapid.SampledFrom([]domain.Kind{"future.kind", domain.KindBanImposed}).Draw(t, "bad kind")
	}
	return ev
}

// genLog draws a numbered log whose clock mostly moves forward, sometimes
// back, with now and then a re-delivered event.
func genLog(t *rapid.T) []domain.Event {
	n := rapid.IntRange(0, 150).Draw(t, "n")
	clock := time.Duration(0)
	var evs []domain.Event
	for i := 0; i < n; i++ {
		clock += time.Duration(rapid.IntRange(-20, 120).Draw(t, "dt")) * time.Second
		ev := genEvent(t, at(clock))
		ev.Seq = uint64(len(evs) + 1)
		evs = append(evs, ev)
		if len(evs) > 1 && rapid.IntRange(0, 20).Draw(t, "redeliver") == 0 {
			evs = append(evs, evs[len(evs)-2])
		}
	}
	return evs
}

// blockedTable renders Blocked for every pair of the world, and for a
// credential and a model the log never names.
func blockedTable(s *Snapshot, now time.Time) string {
	var b strings.Builder
	for _, cred := range []string{"a", "b", "c", "z"} {
		for _, model := range []string{"m1", "m2", "m3", "m9"} {
			blk, ok := s.Blocked(cred, model, now)
			fmt.Fprintf(&b, "%s/%s:%v:%s:%s:%v ", cred, model, ok, blk.Reason, blk.Until.Format(time.RFC3339Nano), blk.Permanent)
		}
	}
	return b.String()
}

// judged are the moments the property tests compare views at.
func judged(evs []domain.Event) []time.Time {
	out := []time.Time{t0}
	if len(evs) > 0 {
		last := evs[len(evs)-1].At
		out = append(out, last, last.Add(10*time.Minute), last.Add(24*time.Hour))
	}
	return out
}

func TestPropertyCheckpointChunks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		evs := genLog(t)
		whole := fold(evs)

		cuts := rapid.SliceOfN(rapid.IntRange(0, len(evs)), 0, 6).Draw(t, "cuts")
		sort.Ints(cuts)
		s, from := NewState(), 0
		for _, cut := range append(cuts, len(evs)) {
			for _, ev := range evs[from:cut] {
				s = Apply(s, ev)
			}
			from = cut
			data, err := s.MarshalCheckpoint()
			if err != nil {
				t.Fatal(err)
			}
			if s, err = UnmarshalCheckpoint(data); err != nil {
				t.Fatalf("read back a checkpoint at %d: %v", cut, err)
			}
		}
		sameState(t, "checkpoints differ (whole, then in chunks)", whole, s)
		for _, now := range judged(evs) {
			if va, vb := viewJSON(t, whole.Snapshot(), now), viewJSON(t, s.Snapshot(), now); !bytes.Equal(va, vb) {
				t.Fatalf("views at %v differ:\nwhole  %s\nchunks %s", now, va, vb)
			}
			if ba, bb := blockedTable(whole.Snapshot(), now), blockedTable(s.Snapshot(), now); ba != bb {
				t.Fatalf("Blocked at %v differs:\nwhole  %s\nchunks %s", now, ba, bb)
			}
		}
	})
}

// TestPropertyLiveMatchesFullSnapshot checks that the incremental snapshots
// Live publishes always equal a snapshot built from scratch.
func TestPropertyLiveMatchesFullSnapshot(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		evs := genLog(t)
		live := NewLive(nil)
		live.every = rapid.IntRange(1, 8).Draw(t, "every")
		ref := NewState()
		checked := live.Load()
		for i, ev := range evs {
			ref = Apply(ref, ev)
			live.Apply(ev, uint64(rapid.IntRange(0, 3).Draw(t, "pending")))
			if rapid.IntRange(0, 9).Draw(t, "flush") == 0 {
				live.Flush()
			}
			// Check each new snapshot that reflects everything applied.
			if snap := live.Load(); snap != checked && snap.Seq() == ref.Seq() {
				checked = snap
				now := ev.At.Add(time.Minute)
				full := ref.Snapshot()
				if got, want := viewJSON(t, snap, now), viewJSON(t, full, now); !bytes.Equal(got, want) {
					t.Fatalf("after event %d, at %v:\nlive %s\nfull %s", i, now, got, want)
				}
				for _, when := range []time.Time{ev.At, now, ev.At.Add(time.Hour)} {
					if got, want := blockedTable(snap, when), blockedTable(full, when); got != want {
						t.Fatalf("after event %d, Blocked at %v:\nlive %s\nfull %s", i, when, got, want)
					}
				}
			}
		}
		live.Flush()
		for _, now := range judged(evs) {
			if got, want := viewJSON(t, live.Load(), now), viewJSON(t, ref.Snapshot(), now); !bytes.Equal(got, want) {
				t.Fatalf("after flush, at %v:\nlive %s\nfull %s", now, got, want)
			}
		}
	})
}
