package projections

import (
	"iter"
	"strconv"
	"time"

	"github.com/airouter/airouter/domain"
)

// A walk over every pair of a large pool (the unfiltered /health, a
// checkpoint) reads each pair once and drops the read: building a map of
// its counts and a copy of each of its times for every pair would be
// garbage the collector clears while requests are served. PairRead and
// CodeCounts let such a walk read a pair without allocating.

// CodeCounts are a pair's failures per status code: a snapshot's (its
// frozen slice, shared with the snapshot and never written) or a state's
// (its map). The zero value holds none.
type CodeCounts struct {
	frozen []codeCount
	byCode map[int]int
}

// Len is the number of codes counted.
func (c CodeCounts) Len() int { return len(c.frozen) + len(c.byCode) }

// All yields each code with its count, in no particular order.
func (c CodeCounts) All() iter.Seq2[int, int] {
	return func(yield func(code, n int) bool) {
		for _, cc := range c.frozen {
			if !yield(cc.code, cc.n) {
				return
			}
		}
		for code, n := range c.byCode {
			if !yield(code, n) {
				return
			}
		}
	}
}

// Any reports whether keep keeps one of the codes (nil keeps every code).
func (c CodeCounts) Any(keep func(code int) bool) bool {
	for code := range c.All() {
		if keep == nil || keep(code) {
			return true
		}
	}
	return false
}

// Map is the counts keep keeps (nil: all) keyed by the code in decimal,
// as PairView.ErrorCodeCounts holds them; nil when it keeps none.
func (c CodeCounts) Map(keep func(code int) bool) map[string]int {
	var m map[string]int
	for code, n := range c.All() {
		if keep == nil || keep(code) {
			if m == nil {
				m = make(map[string]int, c.Len())
			}
			m[strconv.Itoa(code)] = n
		}
	}
	return m
}

// AppendJSON appends the counts keep keeps (nil: all) as a JSON object
// keyed by code, byte for byte what encoding/json writes for the same
// counts in a map[int]int or a map[string]int keyed by the decimal code:
// the keys in the order of their strings ("1000" < "429" < "500" < "97").
// It allocates nothing for up to 8 codes.
func (c CodeCounts) AppendJSON(b []byte, keep func(code int) bool) []byte {
	var buf [8]codeCount
	kept := buf[:0]
	for code, n := range c.All() {
		if keep == nil || keep(code) {
			kept = append(kept, codeCount{code, n})
		}
	}
	for i := 1; i < len(kept); i++ { // insertion sort: a pair counts few codes
		for j := i; j > 0 && decimalLess(kept[j].code, kept[j-1].code); j-- {
			kept[j], kept[j-1] = kept[j-1], kept[j]
		}
	}
	b = append(b, '{')
	for i, cc := range kept {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(strconv.AppendInt(append(b, '"'), int64(cc.code), 10), '"', ':')
		b = strconv.AppendInt(b, int64(cc.n), 10)
	}
	return append(b, '}')
}

// decimalLess orders codes as their decimal strings sort bytewise, the
// order encoding/json writes a map's keys in.
func decimalLess(x, y int) bool {
	var bx, by [20]byte
	return string(strconv.AppendInt(bx[:0], int64(x), 10)) < string(strconv.AppendInt(by[:0], int64(y), 10))
}

// PairRead is one pair's view read by Snapshot.ReadPair into a value the
// caller owns and reuses from pair to pair. Its PairView holds no counts
// (ErrorCodeCounts nil: they are Counts, the snapshot's own), and its
// times point into the read itself: both hold until the next read into
// it, so a caller that keeps the view takes View. The probe claim, while
// one is open, is the view's own.
type PairRead struct {
	PairView
	Counts CodeCounts
	times  [numPairTimes]time.Time
	has    [numPairTimes]bool
}

// The times of a PairRead, in PairRead.times.
const (
	banUntilAt = iota
	cooldownUntilAt
	benchedUntilAt
	wouldBanUntilAt
	numPairTimes
)

// ReadPair reads the view of one pair at now into r, as Pair sees it,
// without allocating (but for an open probe claim). A pair the log never
// named still shows its credential's wildcard ban and its model's bench.
func (s *Snapshot) ReadPair(key domain.Key, now time.Time, r *PairRead) {
	s.readPair(key, now, r)
	r.BanUntil, r.CooldownUntil = r.at(banUntilAt), r.at(cooldownUntilAt)
	r.BenchedUntil, r.WouldBanUntil = r.at(benchedUntilAt), r.at(wouldBanUntilAt)
}

// View is the read's PairView with times of its own (copies), to keep
// past the next read. Its ErrorCodeCounts stays nil: Counts.Map makes
// them (all, or those a view shows).
func (r *PairRead) View() PairView {
	v := r.PairView
	v.BanUntil, v.CooldownUntil = r.copyOf(banUntilAt), r.copyOf(cooldownUntilAt)
	v.BenchedUntil, v.WouldBanUntil = r.copyOf(benchedUntilAt), r.copyOf(wouldBanUntilAt)
	return v
}

func (r *PairRead) at(i int) *time.Time {
	if !r.has[i] {
		return nil
	}
	return &r.times[i]
}

func (r *PairRead) copyOf(i int) *time.Time {
	if !r.has[i] {
		return nil
	}
	t := r.times[i]
	return &t
}

func (r *PairRead) set(i int, t time.Time) { r.times[i], r.has[i] = t, true }

// readPair fills r but for the PairView's times, which it leaves nil
// (r.times holds them): r does not point into itself, so a read on the
// stack stays there.
func (s *Snapshot) readPair(key domain.Key, now time.Time, r *PairRead) {
	*r = PairRead{PairView: PairView{Credential: key.Credential, Model: key.Model}}
	t := nanos(now)
	if c := lookup(s.creds, key.Credential); c != nil {
		ban := activeBan(c.wild, t)
		if p := lookup(c.pairs, key.Model); p != nil {
			r.Counts = p.codeCounts()
			if b := activeBan(p.ban, t); b != nil {
				ban = b
				r.Probe = probeView(p)
			}
			if cd := p.cooldown; cd != nil && cd.until > t {
				r.set(cooldownUntilAt, cd.cd.Until)
			}
			if sb := p.shadowAt(t); sb != nil {
				r.WouldBan, r.WouldBanReason = true, sb.ban.Reason
				if !sb.perm {
					r.set(wouldBanUntilAt, *sb.ban.Until)
				}
			}
		}
		if cd := c.cooldown; cd != nil && cd.until > t && (!r.has[cooldownUntilAt] || cd.cd.Until.After(r.times[cooldownUntilAt])) {
			r.set(cooldownUntilAt, cd.cd.Until)
		}
		if ban != nil {
			r.Banned, r.BanModel, r.BanOrigin, r.BanReason = true, ban.ban.Model, ban.ban.Origin, ban.ban.Reason
			r.BanErrorCode, r.BanPermanent = ban.ban.ErrorCode, ban.perm
			if !ban.perm {
				r.set(banUntilAt, *ban.ban.Until)
			}
		}
	}
	if m := lookup(s.models, key.Model); m != nil && m.bench != nil && m.bench.until > t {
		r.set(benchedUntilAt, m.bench.bench.Until)
	}
}

// codeCounts is the pair's failures per status code: a snapshot's frozen
// slice or a state's map.
func (p *pairRec) codeCounts() CodeCounts {
	if len(p.frozenCounts) > 0 {
		return CodeCounts{frozen: p.frozenCounts}
	}
	return CodeCounts{byCode: p.counts}
}
