package adminapi

import (
	"bytes"
	"net/http"
	"testing"
)

// countedRig is a rig on a pool of creds × models configured pairs, each
// with failures of three codes on the log (one, 1000, not watched) and a
// tenth of them banned for good: a permanent ban's entry holds no time, so
// what /health allocates for the pool's bans does not grow with it.
func countedRig(t *testing.T, creds, models int) *rig {
	t.Helper()
	return poolRig(t, creds, models, 0, []int{500, 429, 1000}, 0)
}

// The unfiltered /health allocates nothing per pair it walks (every pair
// read into one PairRead, its counts written from the snapshot's own):
// on a pool ten times larger, with as many credentials, it makes about as
// many allocations, and its document is encoding/json's.
func TestWholeHealthAllocatesNothingPerPair(t *testing.T) {
	render := func(r *rig) (float64, []byte) {
		snap, now := r.api.current(), r.api.now().UTC()
		var w countingWriter
		n := testing.AllocsPerRun(3, func() {
			w = countingWriter{header: http.Header{}}
			r.api.writeWholeHealth(&w, snap, now)
		})
		if w.status != http.StatusOK || w.n == 0 {
			t.Fatalf("status %d, %d bytes", w.status, w.n)
		}
		_, _, body := get(t, r.srv.URL+"/health")
		return n, body
	}
	small, large := countedRig(t, 5, 40), countedRig(t, 5, 400)
	a, _ := render(small)
	b, body := render(large)
	perPair := (b - a) / float64(5*400-5*40)
	t.Logf("%.0f allocations for 200 pairs, %.0f for 2,000: %.3f per pair", a, b, perPair)
	if perPair > 0.05 {
		t.Errorf("%.2f allocations per pair, want none", perPair)
	}
	if _, _, want := get(t, referenceHealth(large)); !bytes.Equal(body, want) {
		t.Errorf("/health differs from encoding/json's document")
	}
	if !bytes.Contains(body, []byte(`"error_code_counts":{"429":1,"500":1}`)) || !bytes.Contains(body, []byte(`"banned_error_counts":{"429":`)) {
		t.Errorf("the document lacks the pairs' watched counts or the credentials' banned counts")
	}
}
