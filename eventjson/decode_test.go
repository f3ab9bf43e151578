package eventjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/airouter/airouter/domain"
)

// reference is what Decode must return: json.Unmarshal into an Event.
func reference(b []byte) (domain.Event, error) {
	var e domain.Event
	err := json.Unmarshal(b, &e)
	return e, err
}

// checkDecode fails the test when Decode and the reference disagree on b.
func checkDecode(t testing.TB, b []byte) {
	t.Helper()
	want, wantErr := reference(b)
	got, err := Decode(b)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("Decode(%q): error %v, encoding/json says %v", b, err, wantErr)
	}
	if wantErr != nil {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode(%q)\n got %#v %+v\nwant %#v %+v", b, got, got.Outcome, want, want.Outcome)
	}
	if got.At.Location().String() != want.At.Location().String() || !got.At.Equal(want.At) {
		t.Fatalf("Decode(%q): at %v, want %v", b, got.At, want.At)
	}
}

const canonical = `{"v":1,"kind":"outcome.recorded","at":"2026-09-21T10:00:00.123456789Z",` +
	`"outcome":{"credential":"cred-007","model":"model-042","status":429,"class":"rate_limited",` +
	`"latency_ms":812,"attempt":2,"request_id":"req-0000abcd","retry_after_ms":30000,"proxy":true,"body_unsent":true}}`

func TestDecodeTable(t *testing.T) {
	tests := []struct {
		name string
		in   string
		fast bool // the fast path decodes it (else encoding/json does)
	}{
		{"canonical outcome", canonical, true},
		{"minimal outcome", `{"v":1,"kind":"outcome.recorded","at":"2026-09-21T10:00:00Z","outcome":{"credential":"a","model":"m","class":"canceled","latency_ms":0,"attempt":1}}`, true},
		{"reordered with whitespace", " \r\n\t{ \"outcome\" : { \"attempt\" : 3 , \"model\":\"m\" ,\"credential\":\"c\"} ,\n\"at\":\"2000-02-29T23:59:59.5Z\", \"kind\":\"outcome.recorded\",\"v\" : 1 }\n ", true},
		{"id and unicode", `{"v":1,"kind":"outcome.recorded","id":"é-😀","at":"2026-01-01T00:00:00Z","outcome":{"credential":"ключ","model":"模型"}}`, true},
		{"nulls", `{"v":null,"kind":null,"id":null,"at":null,"outcome":{"credential":null,"status":null,"proxy":null,"class":null}}`, true},
		{"null outcome", `{"v":1,"kind":"outcome.recorded","outcome":null}`, true},
		{"empty object", `{}`, true},
		{"empty outcome", `{"outcome":{}}`, true},
		{"unknown fields anywhere", `{"x":[1,-2.5e+3,{"y":null},[],"s"],"v":1,"outcome":{"z":{"a":[true,false]},"model":"m","w":0.1}}`, true},
		{"unknown kind", `{"v":9,"kind":"future.thing","at":"2026-01-01T00:00:00Z"}`, true},
		{"negative and minus zero", `{"v":-0,"outcome":{"status":-1,"latency_ms":-9223372036854775,"retry_after_ms":0}}`, true},
		{"fraction truncated past nanoseconds", `{"at":"2026-09-21T10:00:00.1234567891234Z"}`, true},
		{"year zero and far future", `{"at":"0000-01-01T00:00:00Z","id":"x"}`, true},
		{"offset time", `{"at":"2026-09-21T10:00:00+02:00"}`, false},
		{"zero offset time", `{"at":"2026-09-21T10:00:00+00:00"}`, false},
		{"comma fraction", `{"at":"2026-09-21T10:00:00,5Z"}`, false},
		{"lower-case z", `{"at":"2026-09-21T10:00:00z"}`, false},
		{"february 30", `{"at":"2026-02-30T10:00:00Z"}`, false},
		{"february 29 of a leap year", `{"at":"2024-02-29T10:00:00Z"}`, true},
		{"february 30 of a leap year", `{"at":"2024-02-30T10:00:00Z"}`, false},
		{"february 29 of a century", `{"at":"1900-02-29T10:00:00Z"}`, false},
		{"april 31", `{"at":"2026-04-31T10:00:00Z"}`, false},
		{"hour 24", `{"at":"2026-04-30T24:00:00Z"}`, false},
		{"leap second", `{"at":"2026-06-30T23:59:60Z"}`, false},
		{"one fraction digit", `{"at":"2026-06-30T23:59:59.1Z"}`, true},
		{"empty fraction", `{"at":"2026-06-30T23:59:59.Z"}`, false},
		{"not a time", `{"at":"yesterday"}`, false},
		{"escaped string", `{"outcome":{"credential":"a\"b","model":"\u00e9"}}`, false},
		{"html escapes as Encode writes them", `{"outcome":{"credential":"\u003cx\u003e"}}`, false},
		{"invalid utf-8", "{\"outcome\":{\"credential\":\"\xff\"}}", false},
		{"case-folded key", `{"V":2,"Outcome":{"Model":"m"}}`, false},
		{"duplicate key", `{"v":1,"v":2}`, false},
		{"duplicate payload key", `{"outcome":{"model":"a"},"outcome":{"credential":"b"}}`, false},
		{"other payload", `{"v":1,"kind":"ban.imposed","ban":{"credential":"a","model":"*","origin":"admin","error_code":0,"since":"2026-01-01T00:00:00Z","permanent":true}}`, false},
		{"float into int", `{"v":1.0}`, false},
		{"exponent into int", `{"outcome":{"status":2e2}}`, false},
		{"huge number", `{"outcome":{"latency_ms":123456789012345678901234}}`, false},
		{"string into int", `{"v":"1"}`, false},
		{"19 digits past int64", `{"outcome":{"latency_ms":9999999999999999999}}`, false},
		{"smallest int64", `{"outcome":{"latency_ms":-9223372036854775808}}`, false},
		{"18 digits", `{"outcome":{"latency_ms":-999999999999999999}}`, true},
		{"number into bool", `{"outcome":{"proxy":0}}`, false},
		{"string into bool", `{"outcome":{"proxy":"true"}}`, false},
		{"number into string", `{"kind":1}`, false},
		{"deep unknown", `{"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, false},
		{"null event", `null`, false},
		{"array", `[]`, false},
		{"empty", ``, false},
		{"truncated", canonical[:len(canonical)-1], false},
		{"trailing garbage", canonical + "x", false},
		{"two objects", canonical + canonical, false},
		{"trailing comma", `{"v":1,}`, false},
		{"leading zero", `{"v":01}`, false},
		{"bare minus", `{"x":-}`, false},
		{"bad literal", `{"outcome":{"proxy":tru}}`, false},
		{"control character", "{\"id\":\"a\tb\"}", false},
		{"missing colon", `{"v" 1}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, fast := decodeFast([]byte(tc.in), nil); fast != tc.fast {
				t.Errorf("fast path handled it: %v, want %v", fast, tc.fast)
			}
			checkDecode(t, []byte(tc.in))
		})
	}
}

// TestFastFieldsMatchStructs keeps the field lists of the fast path in step
// with the structs: a field it does not know would be silently skipped.
func TestFastFieldsMatchStructs(t *testing.T) {
	for _, tc := range []struct {
		typ    reflect.Type
		fields []string
	}{{reflect.TypeFor[domain.Event](), eventFields[:]}, {reflect.TypeFor[domain.Outcome](), outcomeFields[:]}} {
		var names []string
		for f := range tc.typ.Fields() {
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "-" {
				names = append(names, name)
			}
		}
		if !reflect.DeepEqual(names, tc.fields) {
			t.Errorf("%s has JSON fields %q, the fast path knows %q", tc.typ, names, tc.fields)
		}
	}
}

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

func BenchmarkDecodeOutcome(b *testing.B) {
	line := []byte(canonical)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	replica := []byte(strings.TrimSuffix(canonical, "}}") + `,"tokens":1234,"replica":"router-7.example:8080"}}`)
	b.Run("fast-replica", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(replica); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reference(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A Decoder decodes exactly as Decode does, and hands out one copy of each
// credential and model name.
func TestDecoderInternsNames(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 23))
	var dec Decoder
	for range 5000 {
		line, err := Encode(randomEvent(rng))
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := Decode(line)
		got, err := dec.Decode(line)
		if (err != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("Decoder.Decode(%s) = %+v, %v; Decode gives %+v, %v", line, got, err, want, wantErr)
		}
	}
	line := []byte(canonical)
	a, _ := dec.Decode(line)
	b, _ := dec.Decode(line)
	if a.Outcome == nil || unsafe.StringData(a.Outcome.Credential) != unsafe.StringData(b.Outcome.Credential) ||
		unsafe.StringData(a.Outcome.Model) != unsafe.StringData(b.Outcome.Model) {
		t.Fatal("the same names decoded twice are two copies")
	}
	allocs := testing.AllocsPerRun(100, func() { _, _ = dec.Decode(line) })
	plain := testing.AllocsPerRun(100, func() { _, _ = Decode(line) })
	if allocs > plain-2 {
		t.Fatalf("Decoder.Decode allocates %.0f times, Decode %.0f: the names are not shared", allocs, plain)
	}
}
