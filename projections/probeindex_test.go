package projections

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/airouter/airouter/domain"
)

var genPolicy = rapid.SampledFrom([]domain.RecoveryPolicy{
	{ProbeAfter: time.Second},
	{ProbeAfter: 30 * time.Second, ProbeMax: 2 * time.Minute},
	{ProbeAfter: time.Minute, ProbeMax: time.Hour},
	{ProbeAfter: 5 * time.Minute},
	{ProbeAfter: 1 << 30, ProbeMax: 0}, // its gap wraps past interval 32
})

// genProbeEvent draws an event that makes, ends or holds back a probed
// hold on a world of four credentials and three models: automatic and
// admin bans of pairs and of whole credentials, their lifts, cooldowns
// (auth ones among them), benches and their lifts, and the claims
// DueProbes offers at the event's time under pol.
func genProbeEvent(t *rapid.T, snap *Snapshot, when time.Time, seq uint64, pol domain.RecoveryPolicy) domain.Event {
	cred := rapid.SampledFrom([]string{"a", "b", "c", "d"}).Draw(t, "cred")
	model := rapid.SampledFrom([]string{"m1", "m2", "m3"}).Draw(t, "model")
	d := when.Sub(t0)
	dur := rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 5 * time.Minute, time.Hour}).Draw(t, "dur")
	switch rapid.IntRange(0, 11).Draw(t, "kind") {
	case 0, 1:
		if rapid.Bool().Draw(t, "wild") {
			model = domain.AllModels
		}
		ev := autoBan(d, fmt.Sprintf("ban/%d", seq), cred, model, 500, dur)
		if dur == 0 {
			ev.Ban.Until, ev.Ban.Permanent = nil, true
		}
		return ev
	case 2:
		if rapid.Bool().Draw(t, "wild") {
			model = domain.AllModels
		}
		return adminBan(d, fmt.Sprintf("admin/%d", seq), cred, model, "drain", max(dur, time.Minute))
	case 3:
		if rapid.Bool().Draw(t, "wild") {
			model = domain.AllModels
		}
		return unban(d, cred, model)
	case 4:
		return cooldown(d, cred, model, dur)
	case 5:
		return authCooldown(d, cred, max(dur, time.Minute), seq)
	case 6:
		return bench(d, model, dur)
	case 7:
		return unbench(d, model)
	case 8, 9, 10:
		if due := snap.DueProbes(when, pol, "r1"); len(due) > 0 {
			return rapid.SampledFrom(due).Draw(t, "claim")
		}
		fallthrough
	default:
		return outcome(d, cred, model, rapid.SampledFrom([]int{200, 500}).Draw(t, "status"))
	}
}

// probeEntries lists the index's entries, tree by tree in key order.
func probeEntries(ix probeIndex) []probeEntry {
	var out []probeEntry
	if ix.due == nil {
		return nil
	}
	for class, tree := range ix.due {
		tree.ascendFrom(probeKey{at: math.MinInt64}, math.MinInt64, func(k probeKey) bool {
			out = append(out, probeEntry{class, k})
			return true
		})
	}
	return out
}

// The prober's answer read from the probe index is the answer of a walk
// of every credential and held pair (scanDueProbes, the reference rule):
// the same claims in the same order, at the
// times of the events, a little and long after, under every policy; and
// the index Live keeps by redoing the entries a swap touched is the one a
// full rebuild gives.
func TestPropertyDueProbesReadFromTheIndex(t *testing.T) {
	dueSeen := 0
	rapid.Check(t, func(t *rapid.T) {
		pol := genPolicy.Draw(t, "pol")
		live := NewLive(nil)
		ref := NewState()
		clock := time.Duration(0)
		n := uint64(rapid.IntRange(1, 120).Draw(t, "n"))
		for seq := uint64(1); seq <= n; seq++ {
			clock += time.Duration(rapid.IntRange(0, 90).Draw(t, "dt")) * time.Second
			ev := genProbeEvent(t, ref.Snapshot(), at(clock), seq, pol)
			ev.Seq = seq
			ref = Apply(ref, ev)
			live.Apply(ev, uint64(rapid.IntRange(0, 2).Draw(t, "pending")))
			snap := live.Load()
			if snap.Seq() != seq {
				continue
			}
			full := ref.Snapshot()
			if got, want := probeEntries(snap.probes), probeEntries(full.probes); !slices.Equal(got, want) {
				t.Fatalf("after event %d (%s): incremental probe index %v, full rebuild %v", seq, ev.Kind, got, want)
			}
			for _, later := range []time.Duration{0, time.Duration(rapid.IntRange(0, 7200).Draw(t, "later")) * time.Second} {
				now := at(clock + later)
				for _, p := range []domain.RecoveryPolicy{pol, genPolicy.Draw(t, "other pol")} {
					got, _ := snap.dueProbes(now, p, "r1")
					want, _ := snap.scanDueProbes(now, p, "r1")
					dueSeen += len(want)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("after event %d at +%v under %+v: index %v, walk %v", seq, later, p, got, want)
					}
				}
			}
		}
	})
	if dueSeen == 0 {
		t.Error("no check found a probe due: the property compared empty answers only")
	}
	t.Logf("%d due probes compared", dueSeen)
}

// probePool is a live snapshot of creds credentials × 100 models, every
// pair named and a tenth under an automatic ban of an hour since 1s
// (burstState), published incrementally.
func probePool(t *testing.T, creds int) (*Live, uint64) {
	t.Helper()
	live := NewLive(nil)
	for _, ev := range burstLog(creds, 100) {
		live.Apply(ev, 1)
	}
	live.Flush()
	return live, live.State().Seq()
}

// A prober's tick reads the probed holds that can be due and no other: at
// 10,000 automatic bans, none due at 30s (the first probe comes a minute
// after each ban) reads none, the bans claimed at one time and due again
// read those alone, and bans that have ended (the sweep has yet to lift
// them) are not read, where the walk of every credential and held pair
// reads 11,000 each time.
func TestDueProbesReadOnlyTheHoldsDue(t *testing.T) {
	live, seq := probePool(t, 1000)
	pol := domain.RecoveryPolicy{ProbeAfter: time.Minute, ProbeMax: time.Hour}
	snap := live.Load()
	if due, read := snap.dueProbes(at(30*time.Second), pol, "r1"); len(due) != 0 || read != 0 {
		t.Errorf("at 30s: %d due, %d holds read; want none of either", len(due), read)
	}
	if _, read := snap.scanDueProbes(at(30*time.Second), pol, "r1"); read != 11_000 {
		t.Fatalf("the walk read %d holds, want the 1,000 credentials and 10,000 held pairs", read)
	}
	due, read := snap.dueProbes(at(61*time.Second), pol, "r1")
	if len(due) != 10_000 || read != 10_000 {
		t.Fatalf("at 61s: %d due, %d read; want every ban's first probe, reading those alone", len(due), read)
	}
	// Claim all but k at 61s; claim the k at 100s: at 100s+2m (the second
	// gap) the k are due again and the rest 39s later.
	const k = 7
	for i, ev := range due {
		seq++
		if i < k {
			ev.At = at(100 * time.Second)
		}
		ev.Seq = seq
		live.Apply(ev, 0)
	}
	snap = live.Load()
	if due, read := snap.dueProbes(at(180*time.Second), pol, "r1"); len(due) != 0 || read != 0 {
		t.Errorf("at 3m after every claim: %d due, %d read; want none", len(due), read)
	}
	due, read = snap.dueProbes(at(181*time.Second), pol, "r1")
	if len(due) != 10_000-k || read != 10_000-k {
		t.Errorf("at 3m01s: %d due, %d read; want the %d claimed at 61s", len(due), read, 10_000-k)
	}
	due, read = snap.dueProbes(at(141*time.Second), domain.RecoveryPolicy{ProbeAfter: time.Minute, ProbeMax: 80 * time.Second}, "r1")
	if len(due) != 10_000-k || read != 10_000-k {
		t.Errorf("under a gap capped at 80s, at 2m21s: %d due, %d read; want the %d claimed at 61s", len(due), read, 10_000-k)
	}
	if due, read := snap.dueProbes(at(220*time.Second), pol, "r1"); len(due) != 10_000 || read != 10_000 {
		t.Errorf("at 3m40s: %d due, %d read; want all", len(due), read)
	}
	if due, read := snap.dueProbes(at(2*time.Hour), pol, "r1"); len(due) != 0 || read != 0 {
		t.Errorf("at 2h, every ban ended and none lifted yet: %d due, %d read; want none", len(due), read)
	}
}

// benchPool is a live snapshot of creds credentials with a pair on each
// of five models, and ten more credentials whose pairs of model "mb" are
// under an automatic ban: a bench of mb holds ten probed bans whatever
// creds is.
func benchPool(creds int) (*Live, uint64) {
	live := NewLive(nil)
	var evs []domain.Event
	for c := range creds {
		for m := range 5 {
			evs = append(evs, outcome(0, fmt.Sprintf("c-%05d", c), fmt.Sprintf("m%d", m), 500))
		}
	}
	for c := range 10 {
		cred := fmt.Sprintf("b-%02d", c)
		evs = append(evs, outcome(0, cred, "mb", 500), autoBan(time.Second, "ban/"+cred, cred, "mb", 500, time.Hour))
	}
	for _, ev := range numbered(evs...) {
		live.Apply(ev, 1)
	}
	live.Flush()
	return live, live.State().Seq()
}

// A bench or unbench swap copies the map of benches and redoes the probe
// entries of its model's probed bans, and shares every credential's block
// index entries with the snapshot before: no shard is copied, and the
// bytes a bench and its unbench allocate are about the same at 200 and
// at 4,000 credentials.
func TestABenchSwapDoesNotGrowWithThePool(t *testing.T) {
	perSwap := func(creds int) uint64 {
		live, seq := benchPool(creds)
		apply := func(ev domain.Event) *Snapshot {
			seq++
			ev.Seq = seq
			live.Apply(ev, 0)
			return live.Load()
		}
		prev := live.Load()
		next := apply(bench(2*time.Second, "mb", time.Hour))
		for i := range credShards {
			if reflect.ValueOf(prev.index.creds[i]).UnsafePointer() != reflect.ValueOf(next.index.creds[i]).UnsafePointer() {
				t.Errorf("%d credentials: the bench copied shard %d of the block index", creds, i)
			}
		}
		if b, ok := next.Blocked("b-03", "mb", at(3*time.Second)); !ok || b.Reason != domain.BlockBenched || b.Probe != nil {
			t.Errorf("%d credentials: b-03/mb under its ban and the bench reads %+v %v, want benched (the bench ends last), no probe", creds, b, ok)
		}
		if b, ok := next.Blocked("c-00001", "mb", at(3*time.Second)); !ok || b.Reason != domain.BlockBenched {
			t.Errorf("%d credentials: c-00001/mb reads %+v %v, want benched", creds, b, ok)
		}
		if due := next.DueProbes(at(2*time.Minute), recoveryPolicy, "r1"); len(due) != 0 {
			t.Errorf("%d credentials: %d probes due under the bench, want none", creds, len(due))
		}
		if next = apply(unbench(3*time.Second, "mb")); len(next.DueProbes(at(2*time.Minute), recoveryPolicy, "r1")) != 10 {
			t.Errorf("%d credentials: after the unbench, want the 10 bans' probes due", creds)
		}
		const n = 50
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range n {
			d := time.Duration(4+i) * time.Second
			apply(bench(d, "mb", time.Hour))
			apply(unbench(d, "mb"))
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / n
	}
	small, large := perSwap(200), perSwap(4000)
	t.Logf("a bench and its unbench: %d bytes at 200 credentials, %d at 4,000", small, large)
	if large > 2*small {
		t.Errorf("a bench and its unbench allocate %d bytes at 4,000 credentials against %d at 200: the swap grows with the pool", large, small)
	}
}
