package adminapi

import (
	"fmt"
	"testing"
)

// BenchmarkScrapeScale gathers every metric (what one Prometheus scrape
// of /metrics computes) on pools of 1,000, 10,000 and 100,000 configured
// pairs (10, 100 and 1,000 credentials of 100 models, a tenth banned):
// the scrape walks every pair, so it is one burst of work that grows with
// the pool.
//
//	go test ./adminapi -run '^$' -bench ScrapeScale -benchtime 3x
func BenchmarkScrapeScale(b *testing.B) {
	for _, creds := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("pairs=%d", creds*100), func(b *testing.B) {
			r := scaleRig(b, creds, 100)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				mfs, err := scrapeGatherer{r.api}.Gather()
				if err != nil {
					b.Fatal(err)
				}
				if len(mfs) == 0 {
					b.Fatal("no metrics")
				}
			}
		})
	}
}
