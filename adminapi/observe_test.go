package adminapi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"pgregory.net/rapid"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// TestObserveCountsWhatTheFoldLifts checks the unban counting of Observe
// against projections: for any history of bans, outcomes, admin unbans and
// expiries, an admin unban's line counts the bans that were active just
// before it (as /api/unban's "removed" counts them), an expiry logs once
// per ban it really ends, an outcome once per ended ban it lifts, and the
// unban metric of each key counts every ban the fold reported lifted or
// expired there.
func TestObserveCountsWhatTheFoldLifts(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		creds := []string{"a", "b"}
		models := []string{"*", "m1", "m2"}
		logs := &logBuffer{}
		api, err := New(Deps{
			MasterKey: masterKey, Snapshot: projections.NewState().Snapshot, WaitFor: func(context.Context, uint64) error { return nil },
			Publish: func(context.Context, domain.Event) (uint64, error) { return 0, nil },
			Logger:  hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug, JSONFormat: true}),
			// Routed, so their unbans keep their own label (see
			// TestALiftedBanOnAModelConfigDoesNotRouteLeavesNoSeries).
			ConfiguredPairs: []Pair{{Credential: "a", Model: "m1"}, {Credential: "b", Model: "m2"}},
		})
		if err != nil {
			rt.Fatal(err)
		}
		st := projections.NewState()
		ended := map[domain.Key]float64{}
		now := t0
		var seq uint64
		// apply folds ev, observes it and returns how many lines with msg
		// it wrote and, for a manual unban, the line's "removed".
		apply := func(ev domain.Event, msg string) (int, any) {
			seq++
			ev.Seq, ev.V = seq, domain.SchemaVersion
			var ch projections.Change
			st, ch = projections.ApplyReport(st, ev)
			for _, c := range ch.Bans {
				if c.Kind == projections.BanLifted || c.Kind == projections.BanExpired {
					ended[c.Key()]++
				}
			}
			logs.Reset()
			api.Observe(ev, ch, true)
			lines, removed := 0, any(nil)
			for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				var m logLine
				if l == "" {
					continue
				}
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					rt.Fatalf("log line is not JSON: %q: %v", l, err)
				}
				if m["@message"] == msg {
					lines, removed = lines+1, m["removed"]
				}
			}
			return lines, removed
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
				apply(domain.Event{Kind: domain.KindBanImposed, ID: fmt.Sprintf("ban/%d", i), At: now, Ban: b}, "")
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
				if lines, removed := apply(ev, "Credential unbanned manually"); lines != 1 || removed != float64(want) {
					rt.Fatalf("unban %s/%q at step %d: %d lines, removed %v, want 1 line, removed %d", cred, model, i, lines, removed, want)
				}
			case 3:
				for _, ev := range st.ExpiredBans(now) {
					if lines, _ := apply(ev, "Credential unbanned (ban expired)"); lines != 1 {
						rt.Fatalf("expiry of %s logged %d lines, want 1", ev.Unban.BanID, lines)
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
				if lines, _ := apply(ev, "Credential unbanned (ban expired)"); lines != want {
					rt.Fatalf("outcome on %s/%s at step %d logged %d ended bans, want %d", cred, model, i, lines, want)
				}
			}
		}
		got := map[domain.Key]float64{}
		mfs, err := api.Registry().Gather()
		if err != nil {
			rt.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "auto_ai_router_credential_unban_events_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				var k domain.Key
				for _, l := range m.GetLabel() {
					switch l.GetName() {
					case "credential":
						k.Credential = l.GetValue()
					case "model":
						k.Model = l.GetValue()
					}
				}
				got[k] = m.GetCounter().GetValue()
			}
		}
		if !maps.Equal(got, ended) {
			rt.Fatalf("unban metrics %v, the fold lifted or expired %v", got, ended)
		}
	})
}

func TestObserveIgnoresEventsWithoutPayload(t *testing.T) {
	r := newRig(t)
	for _, k := range domain.Kinds {
		r.api.Observe(domain.Event{Kind: k, Seq: 99}, projections.Change{}, true)
	}
	r.api.Observe(domain.Event{Seq: 100}, projections.Change{}, true) // a skipped message
	if got := r.logs.String(); got != "" {
		t.Errorf("empty events logged: %s", got)
	}
}
