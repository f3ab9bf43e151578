package eventjson

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
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
