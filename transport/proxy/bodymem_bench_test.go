package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/airouter/airouter/domain"
)

// padReader yields n bytes of 'a' without holding them.
type padReader struct{ n int64 }

func (r *padReader) Read(b []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), r.n)]
	for i := range b {
		b[i] = 'a'
	}
	r.n -= int64(len(b))
	return len(b), nil
}

// bigBody is a chat request of exactly size bytes, generated as it is
// read.
func bigBody(size int64) io.Reader {
	const prefix, suffix = `{"model":"gpt-4o","pad":"`, `"}`
	return io.MultiReader(strings.NewReader(prefix), &padReader{n: size - int64(len(prefix)+len(suffix))}, strings.NewReader(suffix))
}

// peakRSS is the process's peak resident set (VmHWM) in MiB, or -1 where
// /proc is not there.
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 64)
			return kb / 1024
		}
	}
	return -1
}

// BenchmarkConcurrentLargeBodies sends 20 bodies of 99 MiB at once through
// the proxy to an upstream that discards them, and reports the process's
// peak RSS. Run it alone, in its own process, for a meaningful peak:
//
//	go test ./transport/proxy -run XXX -bench ConcurrentLargeBodies -benchtime 1x
func BenchmarkConcurrentLargeBodies(b *testing.B) {
	const n, size = 20, 99 << 20
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, chatOK("ok"))
	}))
	defer up.Close()
	p, err := New(Deps{MasterKey: masterKey, Credentials: []Credential{{Name: "c", Type: domain.CredentialOpenAI, BaseURL: up.URL + "/v1"}}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	statuses := map[int]int{}
	var mu sync.Mutex
	for b.Loop() {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", bigBody(size))
				req.ContentLength = size
				req.Header.Set("Authorization", "Bearer "+masterKey)
				resp, err := http.DefaultClient.Do(req)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					statuses[-1]++
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				statuses[resp.StatusCode]++
			})
		}
		wg.Wait()
	}
	b.ReportMetric(peakRSS(), "peak-RSS-MiB")
	b.Logf("statuses: %v", statuses)
}
