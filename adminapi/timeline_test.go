package adminapi

import (
	"testing"
	"time"
)

// A kind the timeline draws no bar for is a mark with the credential,
// model and reason its payload names, directly or in a ban it carries, so
// kinds added after this code are drawn too; one naming neither is not.
func TestMarksReadKindsTheTimelineDoesNotKnow(t *testing.T) {
	at := time.Date(2026, 11, 29, 3, 12, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, raw string
		want      Mark
		ok        bool
	}{
		{"a payload naming the pair", `{"v":1,"kind":"ban.shadowed","at":"2026-11-29T03:12:00Z","shadow":{"credential":"cred-a","model":"gpt-4o","reason":"rule 500: would ban"}}`,
			Mark{Kind: "ban.shadowed", Credential: "cred-a", Model: "gpt-4o", At: at, Reason: "rule 500: would ban"}, true},
		{"a payload carrying a ban", `{"v":1,"kind":"ban.withheld","id":"w/1","at":"2026-11-29T03:12:00Z","withheld":{"ban":{"credential":"cred-b","model":"*","reason":"3 x 429"},"reason":"ejection cap: 1 of 2 out"}}`,
			Mark{Kind: "ban.withheld", Credential: "cred-b", Model: "*", At: at, Reason: "ejection cap: 1 of 2 out"}, true},
		{"a model on every credential", `{"v":1,"kind":"model.probed","at":"2026-11-29T03:12:00Z","probe":{"model":"gpt-4o"}}`,
			Mark{Kind: "model.probed", Credential: "*", Model: "gpt-4o", At: at}, true},
		{"nothing named", `{"v":1,"kind":"settings.other","at":"2026-11-29T03:12:00Z","other":{"max_hops":3}}`, Mark{}, false},
	} {
		got, ok := markFromJSON([]byte(tc.raw))
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: %+v %t, want %+v %t", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
