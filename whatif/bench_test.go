package whatif

import (
	"fmt"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// BenchmarkWhatif weighs a stricter policy over a recorded log of 100,000
// outcomes on 16 credentials and 4 models (a tenth of them failing), with
// the bans the recorded policy decided on them.
func BenchmarkWhatif(b *testing.B) {
	recorded := domain.BanPolicy{Default: domain.Rule{MaxAttempts: 5, Duration: 5 * time.Minute}, Codes: []int{429, 500}}
	rec := newRecorder(recorded)
	for i := 0; i < 100_000; i++ {
		st := 200
		if i%10 == 0 {
			st = 429
		}
		rec.record(domain.Event{V: domain.SchemaVersion, Kind: domain.KindOutcomeRecorded, At: t0.Add(time.Duration(i) * 10 * time.Millisecond),
			Outcome: &domain.Outcome{Credential: fmt.Sprintf("cred-%02d", i%16), Model: fmt.Sprintf("m%d", i%4), Status: st,
				Class: domain.ClassifyStatus(st), Attempt: 1}})
	}
	stricter := recorded
	stricter.Default = domain.Rule{MaxAttempts: 1, Duration: time.Hour}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res := runLog(b, Options{Policy: stricter}, rec.log)
		if len(res.Diff.Added)+len(res.Diff.Changed) == 0 {
			b.Fatal("no change")
		}
	}
	b.ReportMetric(float64(len(rec.log)), "events")
}

// BenchmarkWhatifPoolSize weighs a shorter ban over the same 20,000
// outcomes (a quarter failing, each failure banning its pair for 2 s, so
// bans end all through the log) on a pool of 200 and of 20,000 pairs: a
// run's cost follows the events and the bans that end, not the pool.
//
//	go test ./whatif -run '^$' -bench WhatifPoolSize -benchtime 3x
func BenchmarkWhatifPoolSize(b *testing.B) {
	recorded := domain.BanPolicy{Default: domain.Rule{MaxAttempts: 1, Duration: 2 * time.Second}, Codes: []int{500}}
	for _, creds := range []int{20, 2000} {
		b.Run(fmt.Sprintf("pairs=%d", creds*10), func(b *testing.B) {
			rec := newRecorder(recorded)
			rec.sweepEvery = time.Second
			for i := range 20_000 {
				st := 200
				if i%4 == 0 {
					st = 500
				}
				rec.record(domain.Event{V: domain.SchemaVersion, Kind: domain.KindOutcomeRecorded, At: t0.Add(time.Duration(i) * time.Millisecond),
					Outcome: &domain.Outcome{Credential: fmt.Sprintf("cred-%04d", i%creds), Model: fmt.Sprintf("m%d", i/creds%10),
						Status: st, Class: domain.ClassifyStatus(st), Attempt: 1}})
			}
			shorter := recorded
			shorter.Default.Duration = time.Second
			for b.Loop() {
				if res := runLog(b, Options{Policy: shorter}, rec.log); len(res.Diff.Changed)+len(res.Diff.Added) == 0 {
					b.Fatal("no change")
				}
			}
			b.ReportMetric(float64(len(rec.log)), "events")
		})
	}
}
