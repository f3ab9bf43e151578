package projections

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// TestExpiredBansOnIsExpiredBansForTheKeys holds ExpiredBansOn to
// ExpiredBans: for any keys, the lifts ExpiredBans derives for those keys,
// in its order, whatever else has ended; keys with no ban or a ban not
// ended yet yield nothing.
func TestExpiredBansOnIsExpiredBansForTheKeys(t *testing.T) {
	var evs []domain.Event
	var keys []domain.Key
	for c := range 6 {
		cred := fmt.Sprintf("cred-%d", c)
		for m := range 4 {
			model := fmt.Sprintf("m%d", m)
			keys = append(keys, domain.Key{Credential: cred, Model: model})
			evs = append(evs, outcome(0, cred, model, 500))
			if (c+m)%2 == 0 {
				evs = append(evs, autoBan(time.Second, fmt.Sprintf("b-%d-%d", c, m), cred, model, 500, time.Duration(1+c+m)*time.Minute))
			}
		}
		keys = append(keys, domain.Key{Credential: cred, Model: domain.AllModels})
		if c%3 == 0 {
			evs = append(evs, adminBan(time.Second, fmt.Sprintf("w-%d", c), cred, domain.AllModels, "maintenance", time.Duration(2+c)*time.Minute))
		}
	}
	keys = append(keys, domain.Key{Credential: "nobody", Model: "m0"})
	s := fold(numbered(evs...))
	for _, now := range []time.Duration{0, 3 * time.Minute, 6 * time.Minute, time.Hour} {
		all := s.ExpiredBans(at(now))
		for _, pick := range [][]domain.Key{keys, keys[:5], keys[len(keys)-7:], nil} {
			in := map[domain.Key]bool{}
			for _, k := range pick {
				in[k] = true
			}
			var want []domain.Event
			for _, ev := range all {
				if in[domain.Key{Credential: ev.Unban.Credential, Model: ev.Unban.Model}] {
					want = append(want, ev)
				}
			}
			if got := s.ExpiredBansOn(pick, at(now)); !reflect.DeepEqual(got, want) {
				t.Errorf("at %v on %d keys: %v, want %v", now, len(pick), got, want)
			}
		}
		if now == time.Hour && len(all) == 0 {
			t.Fatal("no ban had ended after an hour: the test checks nothing")
		}
	}
}
