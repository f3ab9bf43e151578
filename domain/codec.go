package domain

import (
	"strings"
	"time"
	"unicode/utf8"
)

// decodeFast decodes an event in the shape Encode writes without
// reflection: the envelope and an outcome payload, fields in any order,
// any whitespace, null values and unknown fields. It reports false for
// anything else (escapes in strings, other payloads, exotic numbers,
// duplicated keys, times that are not UTC "Z", malformed JSON); Decode then
// uses encoding/json, so whatever decodeFast accepts it decodes exactly as
// json.Unmarshal into an Event would.
func decodeFast(b []byte, names map[string]string) (Event, bool) {
	d := fastDecoder{b: b, names: names}
	var e Event
	if !d.event(&e) {
		return Event{}, false
	}
	d.ws()
	if d.i != len(d.b) {
		return Event{}, false
	}
	return e, true
}

// fastDecoder reads JSON from b at i. Every method reports false on input
// it does not handle, and the whole decode is then abandoned.
type fastDecoder struct {
	b []byte
	i int
	// names, when set, interns credential and model names (Decoder).
	names map[string]string
}

// The fields of the structs decoded here, as encoding/json names them;
// keys that match one only case-insensitively are left to encoding/json.
var (
	eventFields   = [...]string{"v", "kind", "id", "at", "outcome", "ban", "unban", "cooldown", "bench", "settings"}
	outcomeFields = [...]string{"credential", "model", "status", "class", "latency_ms", "attempt", "request_id", "retry_after_ms", "proxy"}
)

func (d *fastDecoder) event(e *Event) bool {
	if !d.eat('{') {
		return false
	}
	var seen uint
	for first := true; ; first = false {
		key, more, ok := d.key(first)
		if !ok || !more {
			return ok
		}
		var bit uint
		switch string(key) {
		case "v":
			bit, ok = 1<<0, d.int(&e.V)
		case "kind":
			bit, ok = 1<<1, named(d, &e.Kind, Kinds)
		case "id":
			bit, ok = 1<<2, d.string(&e.ID)
		case "at":
			bit, ok = 1<<3, d.time(&e.At)
		case "outcome":
			bit, ok = 1<<4, d.outcome(e)
		default:
			ok = d.unknown(key, eventFields[:])
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
}

func (d *fastDecoder) outcome(e *Event) bool {
	if d.null() {
		return true
	}
	if !d.eat('{') {
		return false
	}
	o := new(Outcome)
	e.Outcome = o
	var seen uint
	for first := true; ; first = false {
		key, more, ok := d.key(first)
		if !ok || !more {
			return ok
		}
		var bit uint
		switch string(key) {
		case "credential":
			bit, ok = 1<<0, d.name(&o.Credential)
		case "model":
			bit, ok = 1<<1, d.name(&o.Model)
		case "status":
			bit, ok = 1<<2, d.int(&o.Status)
		case "class":
			bit, ok = 1<<3, named(d, &o.Class, classes[:])
		case "latency_ms":
			bit, ok = 1<<4, d.int64(&o.LatencyMS)
		case "attempt":
			bit, ok = 1<<5, d.int(&o.Attempt)
		case "request_id":
			bit, ok = 1<<6, d.string(&o.RequestID)
		case "retry_after_ms":
			bit, ok = 1<<7, d.int64(&o.RetryAfterMS)
		case "proxy":
			bit, ok = 1<<8, d.bool(&o.Proxy)
		default:
			ok = d.unknown(key, outcomeFields[:])
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
}

// classes are the known outcome classes.
var classes = [...]Class{ClassOK, ClassRateLimited, ClassAuth, ClassPayment, ClassServerError, ClassTimeout,
	ClassConnection, ClassEmptyCompletion, ClassModelNotFound, ClassContentPolicy, ClassClientError, ClassCanceled}

// named reads a string into v, sharing the string of the constant in known
// that equals it rather than allocating.
func named[T ~string](d *fastDecoder, v *T, known []T) bool {
	s, ok := d.str()
	for _, k := range known {
		if string(s) == string(k) {
			*v = k
			return ok
		}
	}
	if len(s) > 0 {
		*v = T(s)
	}
	return ok
}

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

// str reads a string value; null reads as empty.
func (d *fastDecoder) str() ([]byte, bool) {
	if d.null() {
		return nil, true
	}
	s, _, ok := d.raw()
	return s, ok
}

func (d *fastDecoder) string(v *string) bool {
	s, ok := d.str()
	if len(s) > 0 {
		*v = string(s)
	}
	return ok
}

// name reads a credential or model name, sharing an earlier copy of it
// when the decoder interns names.
func (d *fastDecoder) name(v *string) bool {
	s, ok := d.str()
	if len(s) == 0 || !ok {
		return ok
	}
	if n, found := d.names[string(s)]; found {
		*v = n
		return true
	}
	*v = string(s)
	if d.names != nil && len(d.names) < maxInternedNames {
		d.names[*v] = *v
	}
	return true
}

func (d *fastDecoder) bool(v *bool) bool {
	switch {
	case d.literal("true"):
		*v = true
	case d.literal("false"), d.literal("null"):
	default:
		return false
	}
	return true
}

// int64 reads an integer of at most 18 digits, without fraction or
// exponent; null reads as 0.
func (d *fastDecoder) int64(v *int64) bool {
	if d.null() {
		return true
	}
	neg := d.i < len(d.b) && d.b[d.i] == '-'
	if neg {
		d.i++
	}
	start, n := d.i, int64(0)
	for ; d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9'; d.i++ {
		n = n*10 + int64(d.b[d.i]-'0')
	}
	digits := d.i - start
	if digits == 0 || digits > 18 || (digits > 1 && d.b[start] == '0') {
		return false
	}
	if neg {
		n = -n
	}
	*v = n
	return true
}

func (d *fastDecoder) int(v *int) bool {
	var n int64
	if !d.int64(&n) || int64(int(n)) != n {
		return false
	}
	*v = int(n)
	return true
}

// time reads an RFC 3339 time in UTC ("Z"); null reads as the zero time.
func (d *fastDecoder) time(v *time.Time) bool {
	if d.null() {
		return true
	}
	s, _, ok := d.raw()
	if ok {
		*v, ok = parseUTC(s)
	}
	return ok
}

// parseUTC parses "2006-01-02T15:04:05Z" with optional fractional seconds
// (digits past the ninth are dropped), giving what time.Time.UnmarshalJSON
// gives. Any other form, an offset among them, is left to it.
func parseUTC(s []byte) (time.Time, bool) {
	if len(s) < len("2006-01-02T15:04:05Z") || s[len(s)-1] != 'Z' ||
		s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	year := digits(s[0:4])
	month, day := digits(s[5:7]), digits(s[8:10])
	hour, minute, sec := digits(s[11:13]), digits(s[14:16]), digits(s[17:19])
	if year < 0 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := s[19 : len(s)-1]; len(frac) > 0 {
		if len(frac) < 2 || frac[0] != '.' {
			return time.Time{}, false
		}
		for i, c := range frac[1:] {
			if c < '0' || c > '9' {
				return time.Time{}, false
			}
			if i < 9 {
				nsec = nsec*10 + int(c-'0')
			}
		}
		for i := len(frac) - 1; i < 9; i++ {
			nsec *= 10
		}
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

// digits returns the value of s, two or four decimal digits, or -1.
func digits(s []byte) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func daysIn(month, year int) int {
	if month == 2 && year%4 == 0 && (year%100 != 0 || year%400 == 0) {
		return 29
	}
	return [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[month-1]
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
