package adminapi

import (
	"context"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// TestBansAndUnbansCountByOrigin: folded events count bans by who imposed
// them and unbans by what ended them (an admin unban, an expiry event),
// whatever their credential and model.
func TestBansAndUnbansCountByOrigin(t *testing.T) {
	api, err := New(Deps{
		MasterKey: masterKey, Snapshot: projections.NewState().Snapshot, WaitFor: func(context.Context, uint64) error { return nil },
		Publish: func(context.Context, domain.Event) (uint64, error) { return 0, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	st := projections.NewState()
	var seq uint64
	apply := func(ev domain.Event) {
		seq++
		ev.Seq, ev.V = seq, domain.SchemaVersion
		var ch projections.Change
		st, ch = projections.ApplyReport(st, ev)
		api.Observe(ev, ch, true)
	}
	until := t0.Add(time.Minute)
	apply(domain.Event{Kind: domain.KindBanImposed, ID: "ban/1", At: t0,
		Ban: &domain.Ban{Credential: "a", Model: "m1", Origin: domain.OriginAdmin, Since: t0, Until: &until}})
	apply(domain.Event{Kind: domain.KindBanImposed, ID: "ban/2", At: t0,
		Ban: &domain.Ban{Credential: "b", Model: "m2", Origin: domain.OriginFail2Ban, ErrorCode: 500, Failures: 3, Since: t0, Permanent: true}})
	apply(domain.Event{Kind: domain.KindBanImposed, ID: "ban/3", At: t0,
		Ban: &domain.Ban{Credential: "c", Model: domain.AllModels, Origin: domain.OriginFail2Ban, ErrorCode: 429, Failures: 3, Since: t0, Permanent: true}})
	apply(domain.Event{Kind: domain.KindBanLifted, ID: "unban/1", At: t0,
		Unban: &domain.Unban{Credential: "b", By: domain.LiftedByAdmin}})
	expired := st.ExpiredBans(until.Add(time.Second))
	if len(expired) != 1 {
		t.Fatalf("expired bans %+v, want the admin ban on a/m1", expired)
	}
	apply(expired[0])

	got := map[string]float64{}
	mfs, err := api.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if n := mf.GetName(); n == "airouter_ban_events_total" || n == "airouter_unban_events_total" {
				got[n+"/"+m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	want := map[string]float64{
		"airouter_ban_events_total/admin":    1,
		"airouter_ban_events_total/fail2ban": 2,
		"airouter_unban_events_total/admin":  1,
		"airouter_unban_events_total/expiry": 1,
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}
