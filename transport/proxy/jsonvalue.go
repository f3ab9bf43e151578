package proxy

import (
	"encoding/binary"
	"math/bits"
)

// The strict value scanner under members and elements: each function
// returns the index after the value starting at b[i] and whether it is
// valid JSON by encoding/json's rules, or, when it is not, the index where
// it stopped being so.

// maxDepth is encoding/json's nesting limit: a body nested deeper is
// refused there, so it is refused here too.
const maxDepth = 10000

// skipValue scans one value inside a container (the value's parent is at
// depth 1).
func skipValue(b []byte, i int) (int, bool) { return scanValue(b, i, 1) }

// scanValue scans the value at b[i] whose parent container is at depth.
func scanValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{':
		return scanObject(b, i, depth+1)
	case '[':
		return scanArray(b, i, depth+1)
	case 't':
		return literal(b, i, "true")
	case 'f':
		return literal(b, i, "false")
	case 'n':
		return literal(b, i, "null")
	}
	return scanNumber(b, i)
}

// literal checks that b[i:] starts with word.
func literal(b []byte, i int, word string) (int, bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

// scanNumber scans -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func scanNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return i, false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

// digits returns the index after the run of decimal digits at b[i:].
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// scanObject scans the object at b[i] == '{' at depth.
func scanObject(b []byte, i, depth int) (int, bool) {
	if depth > maxDepth {
		return i, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		var ok bool
		if i, ok = skipString(b, i); !ok {
			return i, false
		}
		i = skipWS(b, i)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		if i, ok = scanValue(b, skipWS(b, i+1), depth); !ok {
			return i, false
		}
		i = skipWS(b, i)
		switch {
		case i >= len(b):
			return i, false
		case b[i] == '}':
			return i + 1, true
		case b[i] != ',':
			return i, false
		}
		i = skipWS(b, i+1)
	}
}

// scanArray scans the array at b[i] == '[' at depth.
func scanArray(b []byte, i, depth int) (int, bool) {
	if depth > maxDepth {
		return i, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = scanValue(b, i, depth); !ok {
			return i, false
		}
		i = skipWS(b, i)
		switch {
		case i >= len(b):
			return i, false
		case b[i] == ']':
			return i + 1, true
		case b[i] != ',':
			return i, false
		}
		i = skipWS(b, i+1)
	}
}

// Eight bytes at a time: a word's bytes that are a quote, a backslash or a
// control character (below 0x20) are the only ones a string scan must stop
// at. The lowest flagged byte of each test is exact (a borrow only runs
// upwards from a flagged byte), so the lowest of the union is too.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// stopBytes flags the bytes of x (little endian) a string scan stops at.
func stopBytes(x uint64) uint64 {
	q := x ^ (lsb * '"')
	s := x ^ (lsb * '\\')
	return ((x - lsb*0x20) &^ x & msb) | ((q - lsb) &^ q & msb) | ((s - lsb) &^ s & msb)
}

// skipString scans the string at b[i] == '"': it ends at an unescaped
// quote, holds no control character, and its escapes are JSON's. Invalid
// UTF-8 is accepted, as encoding/json accepts it.
func skipString(b []byte, i int) (int, bool) {
	i++
	for {
		for i+8 <= len(b) {
			m := stopBytes(binary.LittleEndian.Uint64(b[i:]))
			if m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
			i++
		}
		switch {
		case i >= len(b) || b[i] < 0x20:
			return i, false
		case b[i] == '"':
			return i + 1, true
		}
		var ok bool
		if i, ok = skipEscape(b, i); !ok {
			return i, false
		}
	}
}

// skipEscape scans the escape at b[i] == '\\'.
func skipEscape(b []byte, i int) (int, bool) {
	if i+1 >= len(b) {
		return i + 1, false
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, true
	case 'u':
		for j := i + 2; j < i+6; j++ {
			if j >= len(b) || !isHex(b[j]) {
				return j, false
			}
		}
		return i + 6, true
	}
	return i + 1, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
