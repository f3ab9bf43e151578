package projections

import (
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

func TestSnapshotBlocked(t *testing.T) {
	type query struct {
		cred, model string
		now         time.Duration
		want        domain.Block // Reason "" for not blocked; Until as an offset from t0 below
		until       time.Duration
	}
	tests := []struct {
		name    string
		events  []domain.Event
		queries []query
	}{
		{"nothing blocks a fresh pair", nil, []query{{"a", "gpt", 0, domain.Block{}, 0}}},
		{"an exact ban blocks its pair until it ends", []domain.Event{autoBan(0, "b1", "a", "gpt", 429, 5*m)}, []query{
			{"a", "gpt", m, domain.Block{Reason: domain.BlockBanned}, 5 * m},
			{"a", "gpt", 5*m - 1, domain.Block{Reason: domain.BlockBanned}, 5 * m},
			{"a", "gpt", 5 * m, domain.Block{}, 0},
			{"a", "llama", m, domain.Block{}, 0},
			{"b", "gpt", m, domain.Block{}, 0},
		}},
		{"a wildcard ban blocks every model, unseen ones too", []domain.Event{adminBan(0, "w", "a", "*", "drain", 30*m)}, []query{
			{"a", "never-seen", m, domain.Block{Reason: domain.BlockBanned}, 30 * m},
		}},
		{"the longer of exact and wildcard applies", []domain.Event{
			adminBan(0, "w", "a", "*", "drain", 30*m), autoBan(0, "b1", "a", "gpt", 429, 5*m), autoBan(0, "b2", "a", "llama", 429, 50*m),
		}, []query{
			{"a", "gpt", m, domain.Block{Reason: domain.BlockBanned}, 30 * m},
			{"a", "llama", m, domain.Block{Reason: domain.BlockBanned}, 50 * m},
		}},
		{"permanent beats finite", []domain.Event{
			adminBan(0, "w", "a", "*", "drain", 30*m), autoBan(0, "b1", "a", "gpt", 401, 0),
		}, []query{
			{"a", "gpt", 1000 * time.Hour, domain.Block{Reason: domain.BlockBanned, Permanent: true}, 0},
			{"a", "llama", m, domain.Block{Reason: domain.BlockBanned}, 30 * m},
		}},
		{"a cooldown blocks its pair", []domain.Event{cooldown(0, "a", "gpt", 2*m)}, []query{
			{"a", "gpt", m, domain.Block{Reason: domain.BlockCoolingDown}, 2 * m},
			{"a", "gpt", 2 * m, domain.Block{}, 0},
		}},
		{"a bench blocks the model on every credential", []domain.Event{bench(0, "gpt", 10*m)}, []query{
			{"a", "gpt", m, domain.Block{Reason: domain.BlockBenched}, 10 * m},
			{"z", "gpt", m, domain.Block{Reason: domain.BlockBenched}, 10 * m},
			{"a", "llama", m, domain.Block{}, 0},
		}},
		{"the block that ends last is reported", []domain.Event{
			autoBan(0, "b1", "a", "gpt", 429, 5*m), cooldown(0, "a", "gpt", 8*m), bench(0, "gpt", 3*m),
			cooldown(0, "a", "llama", 2*m), bench(0, "llama", 9*m),
		}, []query{
			{"a", "gpt", m, domain.Block{Reason: domain.BlockCoolingDown}, 8 * m},
			{"a", "gpt", 6 * m, domain.Block{Reason: domain.BlockCoolingDown}, 8 * m},
			{"a", "llama", m, domain.Block{Reason: domain.BlockBenched}, 9 * m},
		}},
		{"on a tie, banned reads first", []domain.Event{
			autoBan(0, "b1", "a", "gpt", 429, 5*m), cooldown(0, "a", "gpt", 5*m), bench(0, "gpt", 5*m),
		}, []query{{"a", "gpt", m, domain.Block{Reason: domain.BlockBanned}, 5 * m}}},
		{"a lifted ban no longer blocks", []domain.Event{
			adminBan(0, "w", "a", "*", "drain", 0), unban(m, "a", ""),
		}, []query{{"a", "gpt", 2 * m, domain.Block{}, 0}}},
		{"a ban for centuries still blocks", []domain.Event{
			adminBan(0, "w", "a", "*", "forever-ish", 280*365*24*time.Hour),
		}, []query{{"a", "gpt", 2 * m, domain.Block{Reason: domain.BlockBanned}, -1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := fold(numbered(tc.events...)).Snapshot()
			for _, q := range tc.queries {
				got, blocked := snap.Blocked(q.cred, q.model, at(q.now))
				want := q.want
				if want.Reason != "" && !want.Permanent && q.until >= 0 {
					want.Until = at(q.until)
				}
				if blocked != (want.Reason != "") {
					t.Fatalf("Blocked(%s, %s, +%v) = %+v, %v; want %+v", q.cred, q.model, q.now, got, blocked, want)
				}
				if q.until < 0 {
					if got.Reason != want.Reason || !got.Until.After(at(100*365*24*time.Hour)) {
						t.Fatalf("Blocked(%s, %s, +%v) = %+v, want a block far in the future", q.cred, q.model, q.now, got)
					}
					continue
				}
				if got.Reason != want.Reason || got.Permanent != want.Permanent || !got.Until.Equal(want.Until) {
					t.Fatalf("Blocked(%s, %s, +%v) = %+v, want %+v", q.cred, q.model, q.now, got, want)
				}
			}
		})
	}
}

func TestSnapshotIsImmutable(t *testing.T) {
	s := fold(numbered(outcome(0, "a", "gpt", 429), outcome(0, "a", "gpt", 500)))
	snap := s.Snapshot()
	s = Apply(s, outcome(m, "a", "gpt", 429))
	s = Apply(s, autoBan(m, "b1", "a", "gpt", 429, 5*m))
	s = Apply(s, outcome(m, "b", "gpt", 500))
	Apply(s, settings(m, 9))
	v := snap.Pair(domain.Key{Credential: "a", Model: "gpt"}, at(2*m))
	if v.Banned || v.ErrorCodeCounts["429"] != 1 || len(snap.Pairs()) != 1 {
		t.Fatalf("the snapshot changed after it was taken: %+v, pairs %v", v, snap.Pairs())
	}
	if _, ok := snap.Settings(); ok {
		t.Fatal("the snapshot saw settings applied after it was taken")
	}
}

func TestSnapshotViews(t *testing.T) {
	s := fold(numbered(
		outcome(0, "k8s", "llama", 429), outcome(0, "k8s", "llama", 429), outcome(0, "k8s", "qwen", 500),
		autoBan(m, "q", "k8s", "llama", 429, 60*m),
		adminBan(2*m, "w", "k8s", "*", "drain", 30*m),
		autoBan(0, "old", "openai", "gpt", 429, m), // ended by the time we look
		autoBan(0, "p", "openai", "o1", 401, 0),
		cooldown(0, "openai", "o3", 20*m),
		bench(0, "mistral", 15*m),
	))
	snap := s.Snapshot()
	now := at(10 * m)

	bans := snap.Bans(now)
	var keys []string
	for _, b := range bans {
		keys = append(keys, b.Credential+"/"+b.Model)
	}
	if want := "k8s/* k8s/llama openai/o1"; join(keys) != want {
		t.Fatalf("Bans = %v, want %s", keys, want)
	}
	if b := bans[0]; b.Origin != domain.OriginAdmin || b.Reason != "admin: drain" || b.Until == nil || !b.Until.Equal(at(32*m)) || b.ErrorCode != 0 {
		t.Fatalf("wildcard ban view = %+v", b)
	}
	if b := bans[2]; !b.Permanent || b.Until != nil || b.ErrorCode != 401 {
		t.Fatalf("permanent ban view = %+v", b)
	}

	llama := snap.Pair(domain.Key{Credential: "k8s", Model: "llama"}, now)
	if !llama.Banned || llama.BanOrigin != domain.OriginFail2Ban || llama.BanModel != "llama" || llama.ErrorCodeCounts["429"] != 2 {
		t.Fatalf("a model's own ban must be reported over the wildcard: %+v", llama)
	}
	qwen := snap.Pair(domain.Key{Credential: "k8s", Model: "qwen"}, now)
	if !qwen.Banned || qwen.BanOrigin != domain.OriginAdmin || qwen.BanModel != "*" || qwen.ErrorCodeCounts["500"] != 1 {
		t.Fatalf("the wildcard ban must be reported for a model without its own: %+v", qwen)
	}
	gpt := snap.Pair(domain.Key{Credential: "openai", Model: "gpt"}, now)
	if gpt.Banned || gpt.BanOrigin != "" {
		t.Fatalf("an ended ban is reported: %+v", gpt)
	}
	o3 := snap.Pair(domain.Key{Credential: "openai", Model: "o3"}, now)
	if o3.CooldownUntil == nil || !o3.CooldownUntil.Equal(at(20*m)) {
		t.Fatalf("cooldown not reported: %+v", o3)
	}
	if later := snap.Pair(domain.Key{Credential: "openai", Model: "o3"}, at(21*m)); later.CooldownUntil != nil {
		t.Fatalf("an ended cooldown is reported: %+v", later)
	}
	unseen := snap.Pair(domain.Key{Credential: "k8s", Model: "mistral"}, now)
	if !unseen.Banned || unseen.BenchedUntil == nil {
		t.Fatalf("an unseen pair must show the wildcard ban and the bench: %+v", unseen)
	}

	if cb, ok := snap.CredentialBan("k8s", now); !ok || cb.Origin != domain.OriginAdmin {
		t.Fatalf("the admin ban is the credential's reported ban: %+v %v", cb, ok)
	}
	if cb, ok := snap.CredentialBan("openai", now); !ok || cb.Model != "o1" {
		t.Fatalf("openai's reported ban: %+v %v", cb, ok)
	}
	if _, ok := snap.CredentialBan("nobody", now); ok {
		t.Fatal("an unknown credential reports a ban")
	}

	benched := snap.Benched(now)
	if b, ok := benched["mistral"]; !ok || !b.Until.Equal(at(15*m)) || b.Failures != 3 {
		t.Fatalf("Benched = %+v", benched)
	}
	if len(snap.Benched(at(16*m))) != 0 {
		t.Fatal("an ended bench is listed")
	}
	if got := join(keyStrings(snap.Pairs())); got != "k8s/llama k8s/qwen openai/gpt openai/o1 openai/o3" {
		t.Fatalf("Pairs = %s", got)
	}
}

func TestCredentialBanPreference(t *testing.T) {
	tests := []struct {
		name   string
		events []domain.Event
		want   string // model of the reported ban
	}{
		{"admin beats automatic", []domain.Event{autoBan(0, "x", "a", "gpt", 401, 0), adminBan(0, "y", "a", "llama", "r", m)}, "llama"},
		{"permanent beats finite", []domain.Event{autoBan(0, "x", "a", "gpt", 429, 50*m), autoBan(0, "y", "a", "llama", 401, 0)}, "llama"},
		{"later until wins", []domain.Event{autoBan(0, "x", "a", "gpt", 429, 50*m), autoBan(0, "y", "a", "llama", 429, 5*m)}, "gpt"},
		{"the wildcard counts too", []domain.Event{autoBan(0, "x", "a", "gpt", 429, 5*m), adminBan(0, "y", "a", "*", "r", 5*m)}, "*"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, ok := fold(numbered(tc.events...)).Snapshot().CredentialBan("a", at(time.Second))
			if !ok || b.Model != tc.want {
				t.Fatalf("CredentialBan = %+v, %v; want model %s", b, ok, tc.want)
			}
		})
	}
}

func TestFacts(t *testing.T) {
	s := NewState()
	apply := func(ev domain.Event) domain.Facts {
		ev.Seq = s.Seq() + 1
		s = Apply(s, ev)
		return s.Facts(ev)
	}
	f := apply(outcome(0, "a", "gpt", 500))
	if f.Counts[500] != 1 || f.Banned || len(f.ModelFailures) != 1 || f.ModelFailures[0].Seq != 1 {
		t.Fatalf("after one 500: %+v", f)
	}
	f.Counts[500] = 99 // Facts.Counts is a copy
	if f = apply(outcome(m, "b", "gpt", 502)); f.Counts[502] != 1 || len(f.ModelFailures) != 2 || f.Counts[500] != 0 {
		t.Fatalf("after a 502 on b: %+v", f)
	}
	if counts(s, "a", "gpt")[500] != 1 {
		t.Fatal("writing to Facts.Counts changed the state")
	}
	apply(cooldown(m, "a", "gpt", 5*m))
	apply(bench(m, "gpt", 10*m))
	f = apply(outcome(2*m, "a", "gpt", 500))
	if !f.CooldownUntil.Equal(at(6*m)) || !f.BenchedUntil.Equal(at(11*m)) || f.Counts[500] != 2 || len(f.ModelFailures) != 1 {
		t.Fatalf("with cooldown and bench: %+v", f)
	}
	apply(autoBan(3*m, "b1", "a", "gpt", 500, 10*m))
	apply(adminBan(3*m, "w", "a", "*", "r", 20*m))
	f = apply(outcome(4*m, "a", "gpt", 500))
	if !f.Banned || f.BanPermanent || !f.BanUntil.Equal(at(23*m)) || f.Counts[500] != 2 {
		t.Fatalf("while banned (the longer ban counts): %+v", f)
	}
	f = apply(outcome(30*m, "a", "gpt", 200))
	if f.Banned || len(f.Counts) != 0 || len(f.ModelFailures) != 0 || !f.CooldownUntil.IsZero() || !f.BenchedUntil.IsZero() {
		t.Fatalf("after the bans ended and a success: %+v", f)
	}
	if f := s.Facts(bench(0, "gpt", m)); f.Counts != nil || f.Banned {
		t.Fatalf("facts of a non-outcome: %+v", f)
	}
}

func TestExpiredBans(t *testing.T) {
	s := fold(numbered(
		autoBan(0, "b1", "a", "gpt", 429, 5*m), adminBan(0, "w", "a", "*", "r", 10*m),
		autoBan(0, "p", "b", "gpt", 401, 0), autoBan(0, "b2", "b", "llama", 429, 3*m),
	))
	got := s.ExpiredBans(at(5 * m))
	if len(got) != 2 {
		t.Fatalf("ExpiredBans(+5m) = %d events, want 2: %+v", len(got), got)
	}
	first, second := got[0], got[1]
	if first.Unban.Credential != "a" || first.Unban.Model != "gpt" || second.Unban.Model != "llama" {
		t.Fatalf("ExpiredBans order: %+v %+v", first.Unban, second.Unban)
	}
	if first.ID != "expiry/b1" || first.Unban.BanID != "b1" || first.Unban.By != domain.LiftedByExpiry ||
		!first.At.Equal(at(5*m)) || first.Valid() != nil {
		t.Fatalf("expiry event = %+v", first)
	}
	if snapGot := s.Snapshot().ExpiredBans(at(5 * m)); len(snapGot) != 2 || snapGot[0].ID != first.ID {
		t.Fatalf("Snapshot.ExpiredBans = %+v", snapGot)
	}
	for _, ev := range got {
		s = Apply(s, ev)
	}
	if left := s.ExpiredBans(at(5 * m)); len(left) != 0 {
		t.Fatalf("folding the expiries left %+v", left)
	}
	if left := s.ExpiredBans(at(10 * m)); len(left) != 1 || left[0].Unban.Model != "*" {
		t.Fatalf("ExpiredBans(+10m) = %+v", left)
	}
}

func keyStrings(keys []domain.Key) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.String())
	}
	return out
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}
