package adminapi

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// TestTrackerCountsWhatTheFoldLifts checks the unban counting of Observe
// against projections: for any history of bans, outcomes, admin unbans and
// expiries, an admin unban is counted once per ban that was active just
// before it (as /api/unban's "removed" counts them), an expiry once per
// ban it really ends, and an outcome once per ended ban it lifts.
func TestTrackerCountsWhatTheFoldLifts(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		creds := []string{"a", "b"}
		models := []string{"*", "m1", "m2"}
		tr := banTracker{bans: map[domain.Key]trackedBan{}}
		st := projections.NewState()
		now := t0
		var seq uint64
		apply := func(ev domain.Event) {
			seq++
			ev.Seq, ev.V = seq, domain.SchemaVersion
			st = projections.Apply(st, ev)
		}
		n := rapid.IntRange(1, 60).Draw(rt, "steps")
		for i := range n {
			now = now.Add(time.Duration(rapid.IntRange(0, 90).Draw(rt, "advance")) * time.Second)
			cred := rapid.SampledFrom(creds).Draw(rt, "cred")
			switch rapid.IntRange(0, 4).Draw(rt, "kind") {
			case 0, 1:
				b := &domain.Ban{Credential: cred, Model: rapid.SampledFrom(models).Draw(rt, "model"),
					Origin: domain.OriginAdmin, Since: now}
				if ttl := rapid.IntRange(0, 180).Draw(rt, "ttl"); ttl > 0 {
					u := now.Add(time.Duration(ttl) * time.Second)
					b.Until = &u
				} else {
					b.Permanent = true
				}
				ev := domain.Event{Kind: domain.KindBanImposed, ID: fmt.Sprintf("ban/%d", i), At: now, Ban: b}
				apply(ev)
				ev.Seq = seq
				tr.imposed(ev)
			case 2:
				model := rapid.SampledFrom([]string{"", "*", "m1", "m2"}).Draw(rt, "unban model")
				want := 0
				for _, b := range st.Snapshot().Bans(now) {
					if b.Credential == cred && (model == "" || b.Model == model) {
						want++
					}
				}
				ev := domain.Event{Kind: domain.KindBanLifted, ID: fmt.Sprintf("unban/%d", i), At: now,
					Unban: &domain.Unban{Credential: cred, Model: model, By: domain.LiftedByAdmin}}
				apply(ev)
				if got := len(tr.lifted(ev)); got != want {
					rt.Fatalf("unban %s/%q at step %d counted %d, want %d", cred, model, i, got, want)
				}
			case 3:
				for _, ev := range st.ExpiredBans(now) {
					apply(ev)
					if got := len(tr.lifted(ev)); got != 1 {
						rt.Fatalf("expiry of %s counted %d, want 1", ev.Unban.BanID, got)
					}
				}
			case 4:
				model := rapid.SampledFrom(models[1:]).Draw(rt, "outcome model")
				want := 0
				for _, ev := range st.ExpiredBans(now) {
					if u := ev.Unban; u.Credential == cred && (u.Model == model || u.Model == domain.AllModels) {
						want++
					}
				}
				ev := outcome(fmt.Sprintf("o/%d", i), cred, model, 200, now)
				apply(ev)
				if got := len(tr.outcome(ev)); got != want {
					rt.Fatalf("outcome on %s/%s at step %d ended %d bans, want %d", cred, model, i, got, want)
				}
			}
		}
	})
}

func TestObserveIgnoresEventsWithoutPayload(t *testing.T) {
	r := newRig(t)
	for _, k := range domain.Kinds {
		r.api.Observe(domain.Event{Kind: k, Seq: 99}, true)
	}
	r.api.Observe(domain.Event{Seq: 100}, true) // a skipped message
	if got := r.logs.String(); got != "" {
		t.Errorf("empty events logged: %s", got)
	}
}
