package adminapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/redact"
)

// The unfiltered /health document lists every known pair: at 100,000
// pairs it is 20 MB. Built as a Health (a ModelHealth and a map entry per
// pair) and encoded by reflection, it would cost several times its size in
// allocations and hold all of it at once, a burst on the cores that serve
// traffic. writeWholeHealth writes the same bytes as it walks the pairs
// instead: the document's other parts encoded by encoding/json (they grow
// with the credentials, not the pairs, and follow Health's fields), each
// pair's entry appended by hand into a bounded buffer that goes to the
// client as it fills.

// healthFlushAt is the size past which the entries written so far go to
// the client: the most of the document held at once.
const healthFlushAt = 32 << 10

// modelsField is how the empty per-pair map reads in the encoded document
// (Health.Models is followed by Health.BenchedModels, so the comma that
// precedes it makes it unique: a credential or model named "models" maps
// to an object that is never empty).
var modelsField = []byte(`,"models":{}`)

// writeWholeHealth answers the unfiltered /health for snap at now with the
// bytes writeJSON(a.health(snap, now, healthFilter{})) writes, without
// building them whole: the status and every part but the per-pair entries
// are judged first (the status from the first usable pair, as for a
// filtered document; the banned error counts from the pairs that hold a
// ban or a cooldown), then the entries are written in the order of their
// keys, from one read of the pair each, into a PairRead reused from pair
// to pair: the walk allocates nothing per pair.
func (a *API) writeWholeHealth(w http.ResponseWriter, snap *projections.Snapshot, now time.Time) {
	h := a.healthBase(snap, now)
	shown, omitted := a.knownPairs(snap, now, healthFilter{})
	h.ModelsOmitted = len(omitted)
	var rd projections.PairRead // every pair's read, in turn
	for _, p := range shown {
		if k := p.Key(); snap.Holds(k, now) {
			snap.ReadPair(k, now, &rd)
			a.sumBannedCounts(&h, p, &rd)
		}
	}
	h.Status = a.poolStatus(h, snap, now)
	status := http.StatusOK
	if h.Status == StatusUnhealthy {
		status = http.StatusServiceUnavailable
	}
	whole := func() { writeHealth(w, a.health(snap, now, healthFilter{})) }
	doc, err := json.Marshal(h)
	at := bytes.Index(doc, modelsField)
	if err != nil || at < 0 {
		whole() // the document built whole fails to encode the same way
		return
	}
	head, tail := doc[:at+len(modelsField)-1], doc[at+len(modelsField)-1:]
	sortByEntryKey(shown)
	out := &healthWriter{w: w, status: status, buf: make([]byte, 0, healthFlushAt+4<<10)}
	out.buf = append(out.buf, head...)
	for i, p := range shown {
		snap.ReadPair(p.Key(), now, &rd)
		m := a.modelHealth(p, rd.PairView, nil) // written at once: rd's times and counts serve
		if i > 0 {
			out.buf = append(out.buf, ',')
		}
		watched := func(code int) bool { return a.watches(p.Credential, code) }
		if out.buf, err = appendModelEntry(out.buf, m, rd.Counts, watched); err != nil {
			out.fail(a, err, whole)
			return
		}
		if out.flushIfFull() != nil {
			return // the client is gone: the rest would go nowhere
		}
	}
	out.buf = append(append(out.buf, tail...), '\n')
	_ = out.flush()
}

// healthWriter holds the document's bytes not yet written to w; the
// response's header goes with the first of them.
type healthWriter struct {
	w       http.ResponseWriter
	status  int
	buf     []byte
	flushed bool
}

func (o *healthWriter) flushIfFull() error {
	if len(o.buf) < healthFlushAt {
		return nil
	}
	return o.flush()
}

// flush writes the bytes held; its error is the connection's.
func (o *healthWriter) flush() error {
	if !o.flushed {
		hd := o.w.Header()
		hd.Set("Content-Type", "application/json")
		hd.Set("Cache-Control", "no-store")
		o.w.WriteHeader(o.status)
		o.flushed = true
	}
	_, err := o.w.Write(o.buf)
	o.buf = o.buf[:0]
	return err
}

// fail handles an entry the encoder cannot write (a time past year 9999):
// before any byte went out, the answer is the whole document's (whose
// encoding fails the same way: a 500); after, the document is cut short,
// so the client reads invalid JSON rather than a wrong document, and the
// failure is logged.
func (o *healthWriter) fail(a *API, err error, whole func()) {
	if !o.flushed {
		whole()
		return
	}
	a.log.Error("/health cut short: an entry cannot be encoded", "error", redact.String(err.Error()))
}

// sortByEntryKey orders pairs as the document lists them: by their key
// "credential:model", bytewise (encoding/json's map order). A credential
// name never holds ':' (domain.ValidCredentialName), so pairs of two
// credentials are in the order of credential+":", which differs from the
// credentials' own where one is a prefix of the other ("cred-1:" sorts
// after "cred-10:"), and no two pairs share a key.
func sortByEntryKey(pairs []Pair) {
	slices.SortFunc(pairs, entryKeyCompare)
}

// entryKeyCompare compares x.Credential+":"+x.Model with y's without
// building either.
func entryKeyCompare(x, y Pair) int {
	if x.Credential == y.Credential {
		return strings.Compare(x.Model, y.Model)
	}
	n := 0
	for n < len(x.Credential) && n < len(y.Credential) && x.Credential[n] == y.Credential[n] {
		n++
	}
	return int(keyByte(x.Credential, n)) - int(keyByte(y.Credential, n))
}

// keyByte is byte i of credential+":".
func keyByte(credential string, i int) byte {
	if i < len(credential) {
		return credential[i]
	}
	return ':'
}
