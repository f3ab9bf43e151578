package adminapi

import (
	"fmt"
	"net/http"
	"runtime"
	"testing"

	"github.com/airouter/airouter/internal/testkit"
)

// BenchmarkHealthScale renders the unfiltered /health on pools of 1,000,
// 10,000 and 100,000 configured pairs (scaleRig: a tenth banned, every pair
// with a failure counted) into a writer that keeps only the byte count, as
// a socket would: written as it walks the pairs (stream, what /health
// serves), and built whole then encoded by encoding/json (reflect, the
// reference the stream's bytes are held to). It reports the document's
// size, the largest single write and the process's CPU time a render
// (getrusage: the collector's work on the render's garbage included, so
// it holds on a machine others load).
//
//	go test ./adminapi -run '^$' -bench HealthScale -benchtime 3x -benchmem
func BenchmarkHealthScale(b *testing.B) {
	for _, creds := range []int{10, 100, 1000} {
		r := scaleRig(b, creds, 100)
		for _, enc := range []struct {
			name  string
			write func(w http.ResponseWriter)
		}{
			{"stream", func(w http.ResponseWriter) {
				r.api.writeWholeHealth(w, r.api.current(), r.api.now().UTC())
			}},
			{"reflect", func(w http.ResponseWriter) {
				writeHealth(w, r.api.health(r.api.current(), r.api.now().UTC(), healthFilter{}))
			}},
		} {
			b.Run(fmt.Sprintf("pairs=%d/%s", creds*100, enc.name), func(b *testing.B) {
				var w countingWriter
				b.ReportAllocs()
				runtime.GC()
				cpu0 := testkit.ProcessCPU()
				for b.Loop() {
					w = countingWriter{header: http.Header{}}
					enc.write(&w)
					if w.status != http.StatusOK {
						b.Fatalf("status %d", w.status)
					}
				}
				b.ReportMetric(float64((testkit.ProcessCPU()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(w.n), "bytes/doc")
				b.ReportMetric(float64(w.largest), "bytes/write")
			})
		}
	}
}

// countingWriter is an http.ResponseWriter that counts what is written
// and keeps the largest single write's size.
type countingWriter struct {
	header     http.Header
	status     int
	n, largest int
}

func (w *countingWriter) Header() http.Header { return w.header }

func (w *countingWriter) WriteHeader(status int) { w.status = status }

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(p)
	w.largest = max(w.largest, len(p))
	return len(p), nil
}
