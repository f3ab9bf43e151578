package projections

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

func checkpointLog() *State {
	return fold(numbered(
		outcome(0, "a", "gpt", 429), outcome(0, "a", "gpt", 500), outcome(0, "b", "gpt", 503),
		autoBan(m, "b1", "a", "llama", 429, 5*m), adminBan(m, "w", "c", "", "drain", 0),
		autoBan(m, "far", "d", "gpt", 429, 280*365*24*time.Hour),
		cooldown(2*m, "b", "gpt", 3*m), bench(2*m, "qwen", 10*m), outcome(3*m, "a", "qwen", 500),
		settings(4*m, 3), domain.Event{V: 1, Kind: "future.kind", At: at(5 * m)},
	))
}

func TestCheckpointRoundTrip(t *testing.T) {
	s := checkpointLog()
	data, err := s.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.MarshalCheckpoint()
	if err != nil || !bytes.Equal(data, again) {
		t.Fatalf("marshalling twice differs (%v)", err)
	}
	back, err := UnmarshalCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	if round, _ := back.MarshalCheckpoint(); !bytes.Equal(round, data) {
		t.Fatalf("round trip changed the checkpoint:\n%s\n%s", data, round)
	}
	for _, now := range []time.Time{t0, at(4 * m), at(time.Hour)} {
		if a, b := viewJSON(t, s.Snapshot(), now), viewJSON(t, back.Snapshot(), now); !bytes.Equal(a, b) {
			t.Fatalf("view at %v differs after a round trip:\n%s\n%s", now, a, b)
		}
	}
	if back.Seq() != s.Seq() || back.Skipped() != s.Skipped() || !back.LastEventAt().Equal(s.LastEventAt()) {
		t.Fatalf("seq/skipped/time lost: %d %+v %v", back.Seq(), back.Skipped(), back.LastEventAt())
	}
	// The restored state keeps folding like the original.
	next := outcome(6*m, "a", "gpt", 429)
	next.Seq = s.Seq() + 1
	a, _ := Apply(s, next).MarshalCheckpoint()
	b, _ := Apply(back, next).MarshalCheckpoint()
	if !bytes.Equal(a, b) {
		t.Fatalf("folding after a round trip differs:\n%s\n%s", a, b)
	}
}

func TestCheckpointRefusesWhatItCannotRead(t *testing.T) {
	good, err := checkpointLog().MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		data    string
		version bool
	}{
		{"an older version", strings.Replace(string(good), `"version":3`, `"version":1`, 1), true},
		{"version 2, before batches", strings.Replace(string(good), `"version":3`, `"version":2`, 1), true},
		{"a newer version", strings.Replace(string(good), `"version":3`, `"version":4`, 1), true},
		{"no version", `{"seq":3}`, true},
		{"not JSON", `{"version":1,`, false},
		{"empty", ``, false},
		{"wrong shape", `{"version":3,"credentials":"a"}`, false},
		{"repeated credential", `{"version":3,"credentials":[{"name":"a"},{"name":"a"}]}`, false},
		{"unnamed model", `{"version":3,"models":[{"name":""}]}`, false},
		{"repeated pair", `{"version":3,"credentials":[{"name":"a","pairs":[{"model":"x"},{"model":"x"}]}]}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := UnmarshalCheckpoint([]byte(tc.data))
			if err == nil || s != nil {
				t.Fatalf("UnmarshalCheckpoint accepted it: %v", s)
			}
			if errors.Is(err, ErrCheckpointVersion) != tc.version {
				t.Fatalf("error %v: version mismatch = %v, want %v", err, !tc.version, tc.version)
			}
		})
	}
}
