package adminapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// entrySeeds are strings an entry may carry: plain names, every character
// encoding/json escapes, invalid UTF-8 and the line separators.
var entrySeeds = []string{
	"", "gpt-4o", "cred-1", `<script>&amp;"x"</script>`, "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
	`back\slash "quote"`, "caf\u00e9 \u65e5\u672c \U0001F600", "\u2028\u2029", "bad\xff\xfe", "\xe2\x80", "trunc\xe2",
	"a:b", "3 x 429 (rule 429: max_attempts 3, ban 1h)",
}

// entryTimes are times an entry may carry, with whether encoding/json can
// encode them.
var entryTimes = []struct {
	at time.Time
	ok bool
}{
	{time.Date(2026, 9, 21, 17, 29, 0, 0, time.UTC), true},
	{time.Date(2026, 9, 21, 17, 29, 0, 123456789, time.UTC), true},
	{time.Date(2026, 9, 21, 17, 29, 0, 120000000, time.FixedZone("x", 5*3600+30*60)), true},
	{time.Date(2026, 9, 21, 17, 29, 0, 0, time.FixedZone("y", -(23*3600+59*60))), true},
	{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), true},
	{time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), true},
	{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), false},
	{time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), false},
	{time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("z", 24*3600)), false},
}

// wantEntry is encoding/json's encoding of m's entry in the Models map:
// `"key":{...}`, or its error.
func wantEntry(m ModelHealth) ([]byte, error) {
	b, err := json.Marshal(map[string]ModelHealth{m.Credential + ":" + m.Model: m})
	if err != nil {
		return nil, err
	}
	return b[1 : len(b)-1], nil
}

// foldedCounts are counts (keyed by code in decimal) as a snapshot holds
// them: outcomes of those codes folded by projections, then read back.
func foldedCounts(t testing.TB, counts map[string]int) projections.CodeCounts {
	t.Helper()
	live := projections.NewLive(nil)
	i := 0
	for key, n := range counts {
		code, err := strconv.Atoi(key)
		if err != nil || code <= 0 || (code >= 200 && code < 300) {
			t.Fatalf("counts key %q: not a code projections counts", key)
		}
		for range n {
			i++
			live.Apply(outcome(fmt.Sprintf("fold/%d", i), "c", "m", code, t0), 1)
		}
	}
	live.Flush()
	var r projections.PairRead
	live.Load().ReadPair(domain.Key{Credential: "c", Model: "m"}, t0, &r)
	if r.Counts.Len() != len(counts) {
		t.Fatalf("%d codes counted of %v", r.Counts.Len(), counts)
	}
	return r.Counts
}

// checkEntry holds the entry appended for m, its error counts read from
// a snapshot, to encoding/json's encoding of m.
func checkEntry(t *testing.T, m ModelHealth) {
	t.Helper()
	checkKeptEntry(t, m, nil)
}

// checkKeptEntry holds the entry appended for m, with the error counts of
// m that keep keeps read from a snapshot, to encoding/json's encoding of m
// holding only those.
func checkKeptEntry(t *testing.T, m ModelHealth, keep func(code int) bool) {
	t.Helper()
	counts := foldedCounts(t, m.ErrorCodeCounts)
	kept := map[string]int{}
	for key, n := range m.ErrorCodeCounts {
		if code, _ := strconv.Atoi(key); keep == nil || keep(code) {
			kept[key] = n
		}
	}
	m.ErrorCodeCounts = kept
	want, wantErr := wantEntry(m)
	m.ErrorCodeCounts = map[string]int{"999": 1} // not read: the counts are counts'
	got, err := appendModelEntry([]byte("prefix"), m, counts, keep)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Errorf("%+v: error %v, encoding/json's %v", m, err, wantErr)
	case err == nil && !bytes.Equal(got, append([]byte("prefix"), want...)):
		t.Errorf("%+v:\n got %s\nwant prefix%s", m, got, want)
	}
}

// An entry appended by hand is encoding/json's, byte for byte: every
// string escaped alike, every field in its place, empty optional fields
// left out, times as MarshalJSON writes them, and a time it refuses
// refused.
func TestHealthEntryEncoding(t *testing.T) {
	full := func(s string, at *time.Time) ModelHealth {
		return ModelHealth{Credential: "openai-1", Model: s, IsBanned: true, Weight: 5, CurrentRPM: 7, CurrentTPM: 2100,
			LimitRPM: -1, LimitTPM: 50000, ErrorCodeCounts: map[string]int{"429": 3, "500": 1, "401": 12, "1000": 2},
			BanOrigin: domain.OriginAdmin, BanReason: s, BanUntil: at, CooldownUntil: at, BenchedUntil: at,
			WouldBan: true, WouldBanReason: s, WouldBanUntil: at}
	}
	checkEntry(t, ModelHealth{})
	checkEntry(t, ModelHealth{Credential: "relay", Model: "gpt-4o", Weight: 1, LimitRPM: -1, LimitTPM: -1, ErrorCodeCounts: map[string]int{}})
	// Codes whose strings sort unlike their numbers ("1000" < "429" <
	// "500" < "97"), in whatever order the snapshot holds them (its
	// slice is made from a map), more than fit the encoder's stack
	// buffer, and only the watched ones: none watched leaves the field out.
	odd := map[string]int{"97": 2, "500": 1, "1000": 3, "429": 4, "502": 1, "99": 1}
	many := map[string]int{"97": 1, "100": 2, "1000": 3, "10": 4, "1": 5, "404": 6, "408": 7, "429": 8, "500": 9, "503": 10, "599": 11}
	for range 4 {
		checkEntry(t, ModelHealth{Credential: "c", Model: "m", ErrorCodeCounts: odd})
		checkEntry(t, ModelHealth{Credential: "c", Model: "m", ErrorCodeCounts: many})
	}
	checkKeptEntry(t, ModelHealth{Credential: "c", Model: "m", ErrorCodeCounts: odd}, func(code int) bool { return code != 500 && code != 97 })
	checkKeptEntry(t, ModelHealth{Credential: "c", Model: "m", ErrorCodeCounts: many}, func(code int) bool { return code%2 == 0 })
	checkKeptEntry(t, ModelHealth{Credential: "c", Model: "m", ErrorCodeCounts: odd}, func(int) bool { return false })
	for _, s := range entrySeeds {
		checkEntry(t, full(s, nil))
		checkEntry(t, ModelHealth{Credential: s, Model: s, BanOrigin: domain.Origin(s)})
	}
	for _, tt := range entryTimes {
		at := tt.at
		checkEntry(t, full("gpt-4o", &at))
		if _, err := wantEntry(full("gpt-4o", &at)); (err == nil) != tt.ok {
			t.Errorf("%v: encoding/json's error %v, the table says ok=%v", at, err, tt.ok)
		}
		for _, m := range []ModelHealth{{BanUntil: &at}, {CooldownUntil: &at}, {BenchedUntil: &at}, {WouldBanUntil: &at}} {
			checkEntry(t, m)
		}
	}
}

// FuzzHealthEntry: whatever strings and time an entry holds, the hand
// encoding is encoding/json's, or fails where it fails.
func FuzzHealthEntry(f *testing.F) {
	for i, s := range entrySeeds {
		f.Add(s, entrySeeds[(i+3)%len(entrySeeds)], int64(1790000000+i), int64(i*3600))
	}
	f.Add("x", "y", int64(253402300800), int64(0)) // year 10000
	f.Fuzz(func(t *testing.T, model, reason string, sec, off int64) {
		at := time.Unix(sec, sec%1000000007).In(time.FixedZone("f", int(off%(48*3600))))
		code := 1 + int(uint64(off)%1999) // a code projections counts: not 2xx
		if code >= 200 && code < 300 {
			code += 1000
		}
		checkEntry(t, ModelHealth{Credential: "c-1", Model: model, IsBanned: sec%2 == 0, Weight: int(sec % 100),
			ErrorCodeCounts: map[string]int{strconv.Itoa(code): 1 + int(uint64(off)%3), "429": 1 + int(uint64(sec)%3)}, BanOrigin: domain.Origin(reason),
			BanReason: reason, BanUntil: &at, WouldBan: off%2 == 0, WouldBanReason: model, WouldBanUntil: &at})
	})
}
