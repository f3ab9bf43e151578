package projections

import (
	"fmt"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// The scrape's questions read from the block index answer what the views
// of every pair answer: CredentialBanned as CredentialBan, the counts of
// ActiveBansByOrigin as Bans, Holds as Pair's ban and cooldown, before the
// hour bans end, after they end unswept, and after the cooldowns end.
func TestScrapeQuestionsMatchThePairViews(t *testing.T) {
	evs := heldLog(200, 10)
	evs = append(evs,
		adminBan(5*time.Second, "admin/c", "c", "model-00001", "drain", 0),
		outcome(0, "c", "model-00002", 500),
		autoBan(6*time.Second, "ban/c/perm", "c", "model-00003", 500, 0),
		outcome(0, "d", "model-00001", 500),
		domain.Event{V: domain.SchemaVersion, Kind: domain.KindCooldownStarted, At: at(7 * time.Second),
			Cooldown: &domain.Cooldown{Credential: "d", Model: domain.AllModels, Until: at(30 * time.Minute), Status: 401}},
		outcome(0, "e", "model-00001", 200),
	)
	s := fold(numbered(evs...))
	for _, snap := range []*Snapshot{s.Snapshot(), {}} {
		for _, now := range []time.Time{at(time.Minute), at(90 * time.Minute), at(3 * time.Hour)} {
			want := map[domain.Origin]int{}
			for _, b := range snap.Bans(now) {
				want[b.Origin]++
			}
			if got := snap.ActiveBansByOrigin(now); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("at %v ActiveBansByOrigin %v, Bans %v", now, got, want)
			}
			for _, cred := range []string{"a", "b", "c", "d", "e", "none"} {
				_, want := snap.CredentialBan(cred, now)
				if got := snap.CredentialBanned(cred, now); got != want {
					t.Errorf("at %v CredentialBanned(%s) %v, CredentialBan %v", now, cred, got, want)
				}
			}
			held := 0
			for _, k := range append(snap.Pairs(), domain.Key{Credential: "none", Model: "x"}) {
				pv := snap.Pair(k, now)
				want := (pv.Banned && pv.BanModel == k.Model) || pv.CooldownUntil != nil
				if got := snap.Holds(k, now); got != want {
					t.Errorf("at %v Holds(%v) %v, the pair's view %v", now, k, got, want)
				}
				if want {
					held++
				}
			}
			if now.Equal(at(time.Minute)) && snap.Seq() > 0 && held < 12 {
				t.Errorf("at %v %d pairs held, want the bans' and cooldowns' (12 or more)", now, held)
			}
		}
	}
}
