package eventjson

import (
	"strings"
	"unicode/utf8"
)

// The JSON lexical layer of fastDecoder: whitespace, punctuation, literals,
// member names, raw strings, and skipping values it does not decode. It is
// exact where the proxy's body walker is lenient, and that is why it is its
// own: it checks every byte and gives up (leaving the event to
// encoding/json) on escapes, names that are not plain ASCII and deep
// nesting, so a decoded event is always the one encoding/json would give.

// ws skips JSON whitespace.
func (d *fastDecoder) ws() {
	i := d.i
	for ; i < len(d.b); i++ {
		if c := d.b[i]; c > ' ' || (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			break
		}
	}
	d.i = i
}

// eat skips whitespace and then c, reporting whether c was there.
func (d *fastDecoder) eat(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// literal skips whitespace and then lit, reporting whether it was there.
func (d *fastDecoder) literal(lit string) bool {
	d.ws()
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

func (d *fastDecoder) null() bool { return d.literal("null") }

// key reads the next member name of an object whose '{' is consumed, and
// the ':' after it; more is false at the closing '}'. Names that are not
// plain ASCII are not handled: encoding/json folds them by Unicode rules.
func (d *fastDecoder) key(first bool) (key []byte, more, ok bool) {
	if d.eat('}') {
		return nil, false, true
	}
	if !first && !d.eat(',') {
		return nil, false, false
	}
	key, ascii, ok := d.raw()
	if !ok || !ascii || !d.eat(':') {
		return nil, false, false
	}
	return key, true, true
}

// raw skips whitespace and reads a string without escapes and with valid
// UTF-8, returning its bytes between the quotes.
func (d *fastDecoder) raw() (s []byte, ascii, ok bool) {
	if !d.eat('"') {
		return nil, false, false
	}
	b, start, high := d.b, d.i, byte(0)
	for i := start; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			d.i, s = i+1, b[start:i]
			return s, high < utf8.RuneSelf, high < utf8.RuneSelf || utf8.Valid(s)
		case c == '\\' || c < ' ':
			return nil, false, false
		default:
			high |= c
		}
	}
	return nil, false, false
}

// unknown skips the value of a member that names no field. A name equal to
// a field's but for case would set that field, so it is not handled.
func (d *fastDecoder) unknown(key []byte, fields []string) bool {
	for _, f := range fields {
		if strings.EqualFold(string(key), f) {
			return false
		}
	}
	return d.skip(0)
}

// skip checks and skips any JSON value, up to a small nesting depth.
func (d *fastDecoder) skip(depth int) bool {
	d.ws()
	if d.i >= len(d.b) || depth > 32 {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '"':
		_, _, ok := d.raw()
		return ok
	case c == '{':
		d.i++
		for first := true; ; first = false {
			_, more, ok := d.key(first)
			if !ok || !more {
				return ok
			}
			if !d.skip(depth + 1) {
				return false
			}
		}
	case c == '[':
		d.i++
		if d.eat(']') {
			return true
		}
		for d.skip(depth + 1) {
			if d.eat(']') {
				return true
			}
			if !d.eat(',') {
				return false
			}
		}
		return false
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	}
	return d.number()
}

// number skips a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *fastDecoder) number() bool {
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	start := d.i
	if !d.run() || (d.i-start > 1 && d.b[start] == '0') {
		return false
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if !d.run() {
			return false
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if !d.run() {
			return false
		}
	}
	return true
}

// run skips one or more digits.
func (d *fastDecoder) run() bool {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}
