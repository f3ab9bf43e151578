package eventjson

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// Encode's fast path writes exactly what encoding/json writes, for plain and
// odd events alike (odd ones take the encoding/json path).
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 17))
	fast := 0
	check := func(e domain.Event) {
		t.Helper()
		got, err := Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		e.V, e.At = domain.SchemaVersion, e.At.UTC()
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Encode wrote\n%s\nencoding/json writes\n%s", got, want)
		}
		if _, ok := encodeOutcome(nil, e); ok {
			fast++
		}
	}
	ascii := []string{"", "cred-1", "gpt-4o", "a", "Z", "null", "req 1/2:3"}
	for range 20000 {
		e := randomEvent(rng)
		if rng.IntN(2) == 0 { // an outcome as the proxy records it
			pick := func() string { return ascii[rng.IntN(len(ascii))] }
			num := func() int64 { return []int64{0, 1, 429, -5, rng.Int64(), -rng.Int64()}[rng.IntN(6)] }
			e = domain.Event{Kind: domain.KindOutcomeRecorded, ID: pick(), At: e.At, Outcome: &domain.Outcome{Credential: pick(), Model: pick(),
				Status: int(num()), Class: domain.Class(pick()), LatencyMS: num(), Attempt: int(num()), RequestID: pick(),
				RetryAfterMS: num(), Proxy: rng.IntN(2) == 0, BodyUnsent: rng.IntN(2) == 0, Tokens: num(), Replica: pick()}}
		}
		if rng.IntN(4) == 0 {
			e.At = e.At.In(time.FixedZone("X", 3600*(rng.IntN(25)-12)))
		}
		check(e)
	}
	if fast < 3000 {
		t.Fatalf("the fast path wrote only %d of the generated events", fast)
	}
	for _, o := range []domain.Outcome{{}, {Proxy: true}, {BodyUnsent: true}, {Credential: "a", Model: "m", Class: domain.ClassOK, Status: 200},
		{Tokens: 42, Replica: "host-1:8080"}, {Replica: "r<&>"}} {
		check(domain.Event{Kind: domain.KindOutcomeRecorded, At: time.Date(2026, 11, 30, 1, 2, 3, 4000, time.UTC), Outcome: &o})
	}
}

func BenchmarkEncodeOutcome(b *testing.B) {
	e := domain.Event{Kind: domain.KindOutcomeRecorded, At: time.Date(2026, 11, 30, 1, 2, 3, 456789000, time.UTC), Outcome: &domain.Outcome{
		Credential: "openai-1", Model: "gpt-4o", Status: 200, Class: domain.ClassOK, LatencyMS: 231, Attempt: 1, RequestID: "c0ffee-42"}}
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Encode(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	// An outcome of a cluster replica: the tokens charged and the replica.
	r := e
	ro := *e.Outcome
	ro.Tokens, ro.Replica = 1234, "router-7.example:8080"
	r.Outcome = &ro
	b.Run("fast-replica", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Encode(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
