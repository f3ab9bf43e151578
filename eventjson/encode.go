package eventjson

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/airouter/airouter/domain"
)

// Encode renders an event as JSON, stamping the schema version and UTC.
// Outcome events, one per upstream attempt, are written without reflection
// when every string in them is plain (see plainString); the bytes are the
// same as encoding/json writes (TestEncodeMatchesEncodingJSON), which is
// what Encode falls back to for anything else.
func Encode(e domain.Event) ([]byte, error) { return Append(nil, e) }

// Append is Encode into b: it returns b with the event's JSON appended.
func Append(b []byte, e domain.Event) ([]byte, error) {
	e.V = domain.SchemaVersion
	e.At = e.At.UTC()
	if out, ok := encodeOutcome(b, e); ok {
		return out, nil
	}
	js, err := json.Marshal(e)
	if err != nil || b == nil {
		return js, err
	}
	return append(b, js...), nil
}

// encodeOutcome writes an outcome event in encoding/json's shape: fields in
// declaration order, omitempty honoured. It reports false for any other
// event, a string that would need escaping, or a time encoding/json
// refuses or writes differently (years outside 0..9999).
func encodeOutcome(b []byte, e domain.Event) ([]byte, bool) {
	o := e.Outcome
	if e.Kind != domain.KindOutcomeRecorded || o == nil || e.Ban != nil || e.Unban != nil || e.Cooldown != nil ||
		e.Bench != nil || e.Settings != nil || e.At.Year() < 0 || e.At.Year() > 9999 ||
		!plainString(e.ID) || !plainString(o.Credential) || !plainString(o.Model) ||
		!plainString(string(o.Class)) || !plainString(o.RequestID) || !plainString(o.Replica) {
		return nil, false
	}
	size := 224 + len(e.ID) + len(o.Credential) + len(o.Model) + len(o.RequestID)
	if o.Tokens != 0 || o.Replica != "" {
		size += 40 + len(o.Replica)
	}
	b = slices.Grow(b, size)
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(e.V), 10)
	b = append(b, `,"kind":"`...)
	b = append(b, domain.KindOutcomeRecorded...)
	b = append(b, '"')
	if e.ID != "" {
		b = appendField(b, "id", e.ID)
	}
	b = append(b, `,"at":"`...)
	b = e.At.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","outcome":{"credential":"`...)
	b = append(b, o.Credential...)
	b = append(b, `","model":"`...)
	b = append(b, o.Model...)
	b = append(b, '"')
	if o.Status != 0 {
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(o.Status), 10)
	}
	b = appendField(b, "class", string(o.Class))
	b = append(b, `,"latency_ms":`...)
	b = strconv.AppendInt(b, o.LatencyMS, 10)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(o.Attempt), 10)
	if o.RequestID != "" {
		b = appendField(b, "request_id", o.RequestID)
	}
	if o.RetryAfterMS != 0 {
		b = append(b, `,"retry_after_ms":`...)
		b = strconv.AppendInt(b, o.RetryAfterMS, 10)
	}
	if o.Proxy {
		b = append(b, `,"proxy":true`...)
	}
	if o.BodyUnsent {
		b = append(b, `,"body_unsent":true`...)
	}
	if o.Tokens != 0 {
		b = append(b, `,"tokens":`...)
		b = strconv.AppendInt(b, o.Tokens, 10)
	}
	if o.Replica != "" {
		b = appendField(b, "replica", o.Replica)
	}
	return append(b, "}}"...), true
}

// appendField appends ,"key":"value" for a plain value.
func appendField(b []byte, key, value string) []byte {
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":"`...)
	b = append(b, value...)
	return append(b, '"')
}

// plainString reports whether encoding/json writes s as it is between
// quotes: printable ASCII without '"', '\\' and the HTML characters it
// escapes ('<', '>', '&').
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
