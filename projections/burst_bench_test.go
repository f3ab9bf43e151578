package projections

import (
	"fmt"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// burstState is a state of creds × models pairs, every pair named by a
// failed outcome and a tenth of them under an automatic ban of an hour.
func burstState(creds, models int) *State { return fold(burstLog(creds, models)) }

// burstLog is the numbered log burstState folds.
func burstLog(creds, models int) []domain.Event {
	var evs []domain.Event
	for c := range creds {
		for m := range models {
			evs = append(evs, outcome(0, fmt.Sprintf("cred-%04d", c), fmt.Sprintf("model-%03d", m), 500))
		}
	}
	for c := range creds {
		for m := range models {
			if (c+m)%10 == 0 {
				cred, model := fmt.Sprintf("cred-%04d", c), fmt.Sprintf("model-%03d", m)
				evs = append(evs, autoBan(time.Second, "f2b/"+cred+"/"+model, cred, model, 500, time.Hour))
			}
		}
	}
	return numbered(evs...)
}

// BenchmarkBackgroundBursts times, at 1,000 and 100,000 pairs (a tenth
// banned), the largest unit of work each background loop of the fold's
// side does at once: the checkpoint of the state (the checkpointer marshals
// the same bytes from a published snapshot every
// decisions.DefaultCheckpointEvery events, off the writer; see
// BenchmarkCheckpointHandoff), a full snapshot (start-up,
// replay -at), the expiry sweep's ExpiredBans (every second) and the
// prober's DueProbes (every second, with recovery on).
//
//	go test ./projections -run '^$' -bench BackgroundBursts -benchtime 3x
func BenchmarkBackgroundBursts(b *testing.B) {
	for _, size := range [][2]int{{10, 100}, {1000, 100}} {
		s := burstState(size[0], size[1])
		snap := s.Snapshot()
		pairs := size[0] * size[1]
		pol := domain.RecoveryPolicy{ProbeAfter: time.Minute, ProbeMax: time.Hour}
		now := at(2 * time.Hour) // every ban has expired: the sweep's worst case
		for _, c := range []struct {
			name string
			run  func()
		}{
			{"checkpoint", func() { _, _ = s.MarshalCheckpoint() }},
			{"snapshot", func() { _ = s.Snapshot() }},
			{"expired-bans", func() { _ = snap.ExpiredBans(now) }},
			{"expired-bans-none", func() { _ = snap.ExpiredBans(at(time.Minute)) }},
			{"due-probes", func() { _ = snap.DueProbes(at(30*time.Minute), pol, "r1") }},
			{"due-probes-none", func() { _ = snap.DueProbes(at(30*time.Second), pol, "r1") }},
		} {
			b.Run(fmt.Sprintf("%s/pairs=%d", c.name, pairs), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					c.run()
				}
			})
		}
	}
}
