package proxy

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// A small allocation-free JSON walker. The proxy needs a handful of fields
// from request and response bodies (model, stream, usage, whether a
// completion has content) and must forward the rest byte for byte, so it
// walks the structure instead of decoding it. The walk is strict: it
// accepts exactly what encoding/json accepts (literals, numbers, string
// escapes and control characters, nesting depth, nothing but whitespace
// after the object), within the same single pass, so the proxy never
// forwards a body an upstream's parser would read differently or refuse.
// Malformed input makes it report false, never panic.
// It is its own, not the event codec's scanner (eventjson), because it must
// walk any valid body fast, escapes and all, eight string bytes at a time
// (jsonvalue.go), where the codec's gives up on anything encoding/json
// might read differently.

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// members calls fn for each member of the object b (surrounding whitespace
// allowed) with the key (escapes decoded) and the value bounds, and
// stops when fn returns false. It reports whether b is a well-formed
// object as far as it walked.
func members(b []byte, fn func(key []byte, vs, ve int) bool) bool {
	_, ok := walkMembers(b, fn)
	return ok
}

// walkMembers is members; on failure it also returns the offset where b
// stopped being JSON.
func walkMembers(b []byte, fn func(key []byte, vs, ve int) bool) (int, bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return i, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return endOfDocument(b, i+1)
	}
	for i < len(b) {
		if b[i] != '"' {
			return i, false
		}
		ke, ok := skipString(b, i)
		if !ok {
			return ke, false
		}
		key := b[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			// An escaped key reads as its decoded name, as it does
			// upstream: "mod\u0065l" is the model.
			k, ok := stringValue(b[i:ke])
			if !ok {
				return i, false
			}
			key = []byte(k)
		}
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		vs := skipWS(b, i+1)
		ve, ok := skipValue(b, vs)
		if !ok {
			return ve, false
		}
		if !fn(key, vs, ve) {
			return ve, true
		}
		i = skipWS(b, ve)
		if i >= len(b) {
			return i, false
		}
		if b[i] == '}' {
			return endOfDocument(b, i+1)
		}
		if b[i] != ',' {
			return i, false
		}
		i = skipWS(b, i+1)
	}
	return i, false
}

// endOfDocument checks that only whitespace follows the top-level value
// ending at i.
func endOfDocument(b []byte, i int) (int, bool) {
	j := skipWS(b, i)
	return j, j == len(b)
}

// elements calls fn for each element of the array b with its bounds.
func elements(b []byte, fn func(vs, ve int) bool) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return true
	}
	for i < len(b) {
		ve, ok := skipValue(b, i)
		if !ok {
			return false
		}
		if !fn(i, ve) {
			return true
		}
		i = skipWS(b, ve)
		if i >= len(b) {
			return false
		}
		if b[i] == ']' {
			return true
		}
		if b[i] != ',' {
			return false
		}
		i = skipWS(b, i+1)
	}
	return false
}

// field returns the raw value of key in the object b, or nil.
func field(b []byte, key string) []byte {
	var out []byte
	members(b, func(k []byte, vs, ve int) bool {
		if string(k) == key {
			out = b[vs:ve]
			return false
		}
		return true
	})
	return out
}

// stringValue decodes a JSON string value; ok is false for anything else.
func stringValue(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// intValue reads a JSON integer (a float is truncated); 0 when absent.
func intValue(raw []byte) int64 {
	if len(raw) == 0 || raw[0] == '"' || raw[0] == 'n' {
		return 0
	}
	var n int64
	digits := true
	for _, c := range raw {
		if c < '0' || c > '9' || n > (1<<62)/10 {
			digits = false
			break
		}
		n = n*10 + int64(c-'0')
	}
	if digits {
		return n
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0
	}
	return int64(f)
}

// isNull reports whether a raw value is absent or null.
func isNull(raw []byte) bool { return len(raw) == 0 || string(raw) == "null" }

// nonEmpty reports whether a raw value carries something: a non-empty
// string, array or object, a number or true.
func nonEmpty(raw []byte) bool {
	switch {
	case isNull(raw), string(raw) == `""`, string(raw) == "false":
		return false
	case raw[0] == '[' || raw[0] == '{':
		return len(bytes.TrimSpace(raw[1:len(raw)-1])) > 0
	}
	return true
}
