package adminapi

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
)

// countedRig is a rig on a pool of creds × models configured pairs, each
// with failures of three codes on the log (one, 1000, not watched) and a
// tenth of them banned for good: a permanent ban's entry holds no time, so
// what /health allocates for the pool's bans does not grow with it.
func countedRig(t *testing.T, creds, models int) *rig {
	t.Helper()
	cs := make([]Credential, creds)
	pairs := make([]Pair, 0, creds*models)
	for c := range cs {
		cs[c] = Credential{Name: fmt.Sprintf("cred-%04d", c), Type: "openai"}
		for m := range models {
			pairs = append(pairs, Pair{Credential: cs[c].Name, Model: fmt.Sprintf("model-%03d", m)})
		}
	}
	r := newRigEdit(t, func(d *Deps) { d.Credentials, d.ConfiguredPairs = cs, pairs })
	at := r.clock.Now()
	for i, p := range pairs {
		for _, code := range []int{500, 429, 1000} {
			if !r.log.Publish(outcome(fmt.Sprintf("o/%d/%d", i, code), p.Credential, p.Model, code, at)) {
				t.Fatalf("the log dropped an outcome of pair %d", i)
			}
		}
		if i%4096 == 4095 || i == len(pairs)-1 { // within the log's queue
			if err := r.log.Flush(r.ctx); err != nil {
				t.Fatalf("flush the outcomes: %v", err)
			}
		}
	}
	for i, p := range pairs {
		if (i/models+i%models)%10 == 0 {
			if _, err := r.log.PublishControl(r.ctx, autoBan(p.Credential, p.Model, 500, 3, at, 0, uint64(i+1))); err != nil {
				t.Fatalf("publish a ban: %v", err)
			}
		}
	}
	last, err := r.log.LastSeq(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.live.WaitFor(r.ctx, last); err != nil {
		t.Fatal(err)
	}
	return r
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
