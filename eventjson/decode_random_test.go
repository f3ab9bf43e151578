package eventjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// Decode against encoding/json on generated events: random events of every
// kind as Encode writes them, the same rewritten (keys shuffled, spaces,
// unknown members, other spellings) and cut or corrupted, and the fuzz
// target seeded with them.

// Field values the generator picks from: plain, unicode, escapes, HTML,
// control characters, invalid UTF-8.
// The first plainSamples need no escape.
var samples = []string{"", "cred-1", "gpt-4o", "a", "ключ", "模型😀", "Z", "null", "é",
	`q"uote`, `back\slash`, "<&>", "tab\there", "\u2028", "\x01", "\xff\xfe"}

const plainSamples = 9

// randomEvent is an event of any kind with random values; half of them are
// plain (no escapes, numbers the fast path reads).
func randomEvent(rng *rand.Rand) domain.Event {
	plain := rng.IntN(2) == 0
	pick := func() string {
		if plain {
			return samples[rng.IntN(plainSamples)]
		}
		return samples[rng.IntN(len(samples))]
	}
	num := func() int64 {
		if plain {
			return rng.Int64N(2e18) - 1e18
		}
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return rng.Int64N(1000)
		case 2:
			return -rng.Int64()
		}
		return rng.Int64()
	}
	when := func() time.Time {
		t := time.Unix(rng.Int64N(253402300799), 0)
		switch rng.IntN(3) {
		case 0:
			t = t.Add(time.Duration(rng.IntN(1e9)))
		case 1:
			t = t.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
		}
		return t
	}
	e := domain.Event{Kind: domain.Kinds[rng.IntN(len(domain.Kinds))], At: when()}
	if rng.IntN(8) == 0 {
		e.Kind = domain.Kind(pick())
	}
	if rng.IntN(2) == 0 {
		e.ID = pick()
	}
	switch rng.IntN(8) {
	case 0:
		until := when()
		e.Ban = &domain.Ban{Credential: pick(), Model: pick(), Origin: domain.Origin(pick()), Reason: pick(), ErrorCode: int(num()),
			Since: when(), Until: &until, Failures: int(num()), CauseSeq: uint64(num())}
	case 1:
		e.Unban = &domain.Unban{Credential: pick(), Model: pick(), By: domain.LiftedBy(pick()), BanID: pick()}
	case 2:
		e.Cooldown = &domain.Cooldown{Credential: pick(), Model: pick(), Until: when(), Status: int(num())}
	case 3:
		e.Bench = &domain.Bench{Model: pick(), Until: when(), Credentials: []string{pick(), pick()}, Reason: pick()}
	case 4:
		e.Settings = &domain.FallbackSettings{MaxHops: int(num()), TimeBudget: domain.Duration(num())}
	default:
		e.Outcome = &domain.Outcome{Credential: pick(), Model: pick(), Status: int(num()), Class: domain.Class(pick()),
			LatencyMS: num(), Attempt: int(num()), RequestID: pick(), RetryAfterMS: num(), Proxy: rng.IntN(2) == 0,
			Tokens: num(), Replica: pick()}
		if rng.IntN(2) == 0 {
			e.Outcome.Class = domain.ClassifyStatus(int(num()))
		}
	}
	return e
}

// rewrite writes v (as decoded with UseNumber) back as JSON with keys
// shuffled, random whitespace, and now and then unknown members, nulls,
// other spellings of numbers, case-changed or duplicated keys.
func rewrite(w *bytes.Buffer, rng *rand.Rand, v any) {
	space := func() {
		for rng.IntN(6) == 0 {
			w.WriteByte(" \t\r\n"[rng.IntN(4)])
		}
	}
	space()
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v)+2)
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if rng.IntN(8) == 0 {
			keys = append(keys, "unknown_"+fmt.Sprint(rng.IntN(3)))
		}
		if rng.IntN(40) == 0 && len(keys) > 0 {
			keys = append(keys, keys[rng.IntN(len(keys))])
		}
		if rng.IntN(2) == 0 {
			rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		}
		w.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				w.WriteByte(',')
			}
			space()
			name := k
			if rng.IntN(60) == 0 {
				name = strings.ToUpper(k)
			}
			kb, _ := json.Marshal(name)
			w.Write(kb)
			space()
			w.WriteByte(':')
			val, known := v[k]
			switch {
			case !known:
				val = []any{json.Number("-1.5e3"), "x", nil, map[string]any{"y": true}}[rng.IntN(4)]
			case rng.IntN(30) == 0:
				val = nil
			}
			rewrite(w, rng, val)
		}
		space()
		w.WriteByte('}')
	case []any:
		w.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				w.WriteByte(',')
			}
			rewrite(w, rng, x)
		}
		w.WriteByte(']')
	case json.Number:
		switch n := string(v); {
		case rng.IntN(30) == 0 && n == "0":
			w.WriteString("-0")
		case rng.IntN(30) == 0:
			w.WriteString(n + ".0")
		case rng.IntN(30) == 0:
			w.WriteString(n + "e0")
		default:
			w.WriteString(n)
		}
	case string:
		if rng.IntN(20) == 0 && strings.HasSuffix(v, "Z") {
			v = strings.TrimSuffix(v, "Z") + []string{"+00:00", "-07:30", "z", ".5Z"}[rng.IntN(4)]
		}
		b, _ := json.Marshal(v)
		w.Write(b)
	default:
		b, _ := json.Marshal(v)
		w.Write(b)
	}
	space()
}

// longNumber finds integers too long for the fast path (19 digits and more).
var longNumber = regexp.MustCompile(`[0-9]{19}`)

// TestDecodeDifferential decodes thousands of generated events, as Encode
// writes them and rewritten, with Decode and with encoding/json.
func TestDecodeDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	fastCanonical := 0
	for i := 0; i < 20000; i++ {
		line, err := Encode(randomEvent(rng))
		if err != nil {
			t.Fatal(err)
		}
		checkDecode(t, line)
		if _, fast := decodeFast(line, nil); fast {
			fastCanonical++
		} else if bytes.Contains(line, []byte(`"outcome":`)) && !bytes.ContainsRune(line, '\\') && !longNumber.Match(line) {
			t.Fatalf("fast path refused an outcome as Encode writes it: %s", line)
		}
		var tree any
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&tree); err != nil {
			t.Fatal(err)
		}
		var w bytes.Buffer
		rewrite(&w, rng, tree)
		checkDecode(t, w.Bytes())
		if m := w.Bytes(); len(m) > 0 {
			m[rng.IntN(len(m))] = "{}[]\":,0-.e\\ xn"[rng.IntN(15)]
			checkDecode(t, m[:rng.IntN(len(m)+1)])
		}
	}
	if fastCanonical < 3000 {
		t.Fatalf("fast path decoded only %d of the generated lines", fastCanonical)
	}
}

func FuzzDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 5))
	for i := 0; i < 30; i++ {
		line, err := Encode(randomEvent(rng))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line)
	}
	for _, s := range []string{canonical, `{}`, `null`, `{"x":[1,{"y":-0.5e-3}],"outcome":{"proxy":null}}`,
		`{"at":"2026-09-21T10:00:00.1Z","v":-0}`, `{"at":"2026-09-21T10:00:00+01:00"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecode(t, b)
	})
}
