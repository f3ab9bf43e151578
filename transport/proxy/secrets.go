package proxy

import (
	"bytes"
	"slices"
	"strings"
	"unsafe"
)

// masked replaces a configured key found in a pass-through body or in an
// upstream message.
const masked = "[redacted]"

// minSecret is the shortest key that is masked: a shorter one (a test
// value, a placeholder) would mask ordinary words.
const minSecret = 8

// secrets are the credentials' keys, all of them, not only the one an
// attempt used: an upstream may echo any key it was ever sent, and one
// reseller may hold several of the operator's accounts. Client keys and
// the master key are not among them: they are the clients' own, and may
// be short words an answer legitimately holds. New builds the set once;
// it is only read afterwards.
//
// The common case, a body with no key in it, costs a fraction of a pass
// over the body: keys made only of tokenBytes can only sit inside a run
// of such bytes at least as long as the shortest of them (minW), so the
// scan probes one byte per window of minW and skips ordinary words; only
// long runs are searched for the keys. A key with another byte in it
// (rare) is searched for in the whole text.
type secrets struct {
	word  []string // keys of token bytes only, longest first
	other []string // the other keys, longest first
	minW  int      // the shortest key in word
	// inKey marks the bytes some key contains, so a chunk that ends in
	// none of them (an SSE chunk ends in '\n') holds back nothing.
	inKey [256]bool
}

// tokenBytes are the bytes a key is usually made of.
var tokenBytes = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '+' || c == '/' || c == '='
	}
	return t
}()

// newSecrets collects the keys of at least minSecret bytes, once each.
func newSecrets(keys ...string) *secrets {
	s := &secrets{}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if len(k) < minSecret || seen[k] {
			continue
		}
		seen[k] = true
		if isWord(k) {
			s.word = append(s.word, k)
		} else {
			s.other = append(s.other, k)
		}
		for i := 0; i < len(k); i++ {
			s.inKey[k[i]] = true
		}
	}
	// Longest first, so a key that contains another is masked whole.
	longest := func(a, b string) int { return len(b) - len(a) }
	slices.SortFunc(s.word, longest)
	slices.SortFunc(s.other, longest)
	if len(s.word) > 0 {
		s.minW = len(s.word[len(s.word)-1])
	}
	return s
}

func isWord(k string) bool {
	for i := 0; i < len(k); i++ {
		if !tokenBytes[k[i]] {
			return false
		}
	}
	return true
}

// found reports whether b holds a key.
func (s *secrets) found(b string) bool {
	for _, k := range s.other {
		if strings.Contains(b, k) {
			return true
		}
	}
	if len(s.word) == 0 {
		return false
	}
	// Windows of minW bytes, probed at their last byte: a non-token byte
	// there rules out every run of minW starting in the window, so
	// ordinary text is skipped about minW bytes at a time. i is always at
	// the start of a run or at a non-token byte.
	w := s.minW
	for i := 0; i+w <= len(b); {
		p := i + w - 1
		if !tokenBytes[b[p]] {
			i = p + 1
			continue
		}
		q := p
		for q > i && tokenBytes[b[q-1]] {
			q--
		}
		if q > i {
			i = q // the run holding p starts at q: probe the window from there
			continue
		}
		j := p + 1
		for j < len(b) && tokenBytes[b[j]] {
			j++
		}
		for _, k := range s.word {
			if len(k) <= j-i && strings.Contains(b[i:j], k) {
				return true
			}
		}
		i = j
	}
	return false
}

// mask returns b with every key replaced by "[redacted]": b itself when it
// holds none, else a new slice.
func (s *secrets) mask(b []byte) []byte {
	if s == nil || len(b) == 0 || !s.found(unsafe.String(&b[0], len(b))) {
		return b
	}
	out := b
	for _, ks := range [2][]string{s.other, s.word} {
		for _, k := range ks {
			if bytes.Contains(out, []byte(k)) {
				out = bytes.ReplaceAll(out, []byte(k), []byte(masked))
			}
		}
	}
	return out
}

// maskString is mask for a string.
func (s *secrets) maskString(v string) string {
	if s == nil || !s.found(v) {
		return v
	}
	for _, ks := range [2][]string{s.other, s.word} {
		for _, k := range ks {
			v = strings.ReplaceAll(v, k, masked)
		}
	}
	return v
}

// held returns how many bytes at the end of a streamed chunk may be the
// start of a key the next chunk completes. Those bytes are held back and
// masked with the next chunk, so no key split between two reads reaches
// the client.
func (s *secrets) held(chunk []byte) int {
	n := len(chunk)
	if s == nil || n == 0 || !s.inKey[chunk[n-1]] {
		return 0
	}
	best := 0
	for _, ks := range [2][]string{s.word, s.other} {
		for _, k := range ks {
			for l := min(len(k)-1, n); l > best; l-- {
				if chunk[n-1] == k[l-1] && string(chunk[n-l:]) == k[:l] {
					best = l
					break
				}
			}
		}
	}
	if best >= chunkSize/2 {
		return 0 // a key that long (none is) would leave no room to read
	}
	return best
}

// keyed reports whether any of a header's values holds a key.
func (s *secrets) keyed(vv []string) bool {
	for _, v := range vv {
		if s != nil && s.found(v) {
			return true
		}
	}
	return false
}
