package eventjson

import (
	"time"

	"github.com/airouter/airouter/domain"
)

// decodeFast decodes an event in the shape Encode writes without
// reflection: the envelope and an outcome payload, fields in any order,
// any whitespace, null values and unknown fields. It reports false for
// anything else (escapes in strings, other payloads, exotic numbers,
// duplicated keys, times that are not UTC "Z", malformed JSON); Decode then
// uses encoding/json, so whatever decodeFast accepts it decodes exactly as
// json.Unmarshal into an Event would.
func decodeFast(b []byte, names map[string]string) (domain.Event, bool) {
	d := fastDecoder{b: b, names: names}
	var e domain.Event
	if !d.event(&e) {
		return domain.Event{}, false
	}
	d.ws()
	if d.i != len(d.b) {
		return domain.Event{}, false
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
	eventFields   = [...]string{"v", "kind", "id", "at", "outcome", "ban", "unban", "cooldown", "bench", "unbench", "settings", "withheld", "shadowed", "probe", "heartbeat", "policy", "cooldown_lift"}
	outcomeFields = [...]string{"credential", "model", "status", "class", "latency_ms", "attempt", "request_id", "retry_after_ms", "proxy", "body_unsent", "tokens", "replica"}
)

func (d *fastDecoder) event(e *domain.Event) bool {
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
			bit, ok = 1<<1, named(d, &e.Kind, domain.Kinds)
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

func (d *fastDecoder) outcome(e *domain.Event) bool {
	if d.null() {
		return true
	}
	if !d.eat('{') {
		return false
	}
	o := new(domain.Outcome)
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
		case "body_unsent":
			bit, ok = 1<<9, d.bool(&o.BodyUnsent)
		case "tokens":
			bit, ok = 1<<10, d.int64(&o.Tokens)
		case "replica":
			bit, ok = 1<<11, d.name(&o.Replica)
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
var classes = [...]domain.Class{domain.ClassOK, domain.ClassRateLimited, domain.ClassAuth,
	domain.ClassPayment, domain.ClassServerError, domain.ClassTimeout, domain.ClassConnection,
	domain.ClassEmptyCompletion, domain.ClassModelNotFound, domain.ClassContentPolicy,
	domain.ClassClientError, domain.ClassCanceled}

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
