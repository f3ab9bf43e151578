package adminapi

import (
	"errors"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/airouter/airouter/projections"
)

// The hand-written encoding of one /health per-pair entry: byte for byte
// what encoding/json writes for the Models map's entry (its key, then the
// ModelHealth's fields in declaration order, omitempty fields left out
// when empty, strings escaped as json.Marshal escapes them, HTML
// characters included). TestHealthEntryEncoding holds it to
// encoding/json's output.

// appendModelEntry appends m's entry, `"credential:model":{...}`, to b,
// with the counters of counts that keep keeps as its error counts (in
// place of m.ErrorCodeCounts, which it does not read). Its error is
// encoding/json's for the same entry: a time it cannot encode.
func appendModelEntry(b []byte, m ModelHealth, counts projections.CodeCounts, keep func(code int) bool) ([]byte, error) {
	b = append(b, '"')
	b = appendJSONChars(b, m.Credential)
	b = append(b, ':')
	b = appendJSONChars(b, m.Model)
	b = append(b, `":{"credential":`...)
	b = appendJSONString(b, m.Credential)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, m.Model)
	b = append(b, `,"is_banned":`...)
	b = strconv.AppendBool(b, m.IsBanned)
	b = appendIntField(b, `,"weight":`, m.Weight)
	b = appendIntField(b, `,"current_rpm":`, m.CurrentRPM)
	b = appendIntField(b, `,"current_tpm":`, m.CurrentTPM)
	b = appendIntField(b, `,"limit_rpm":`, m.LimitRPM)
	b = appendIntField(b, `,"limit_tpm":`, m.LimitTPM)
	if counts.Any(keep) {
		b = counts.AppendJSON(append(b, `,"error_code_counts":`...), keep)
	}
	b = appendStringField(b, `,"ban_origin":`, string(m.BanOrigin))
	b = appendStringField(b, `,"ban_reason":`, m.BanReason)
	var err error
	for _, t := range []struct {
		field string
		at    *time.Time
	}{{`,"ban_until":`, m.BanUntil}, {`,"cooldown_until":`, m.CooldownUntil}, {`,"benched_until":`, m.BenchedUntil}} {
		if b, err = appendTimeField(b, t.field, t.at); err != nil {
			return b, err
		}
	}
	if m.WouldBan {
		b = append(b, `,"would_ban":true`...)
	}
	b = appendStringField(b, `,"would_ban_reason":`, m.WouldBanReason)
	if b, err = appendTimeField(b, `,"would_ban_until":`, m.WouldBanUntil); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

func appendIntField(b []byte, field string, n int) []byte {
	return strconv.AppendInt(append(b, field...), int64(n), 10)
}

// appendStringField appends an omitempty string field: nothing for "".
func appendStringField(b []byte, field, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, field...), s)
}

// errTimeRange is time.Time.MarshalJSON's refusal of a time RFC 3339
// cannot carry: a year outside 0-9999 or a zone 24 hours or more off UTC.
var errTimeRange = errors.New("a time in /health is outside what RFC 3339 can carry (years 0-9999, zones within 24h of UTC)")

// appendTimeField appends an omitempty *time.Time field as
// time.Time.MarshalJSON writes it (RFC 3339 with nanoseconds).
func appendTimeField(b []byte, field string, t *time.Time) ([]byte, error) {
	if t == nil {
		return b, nil
	}
	b = append(append(b, field...), '"')
	n0 := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	if !strictRFC3339(b[n0:]) {
		return b, errTimeRange
	}
	return append(b, '"'), nil
}

// strictRFC3339 applies MarshalJSON's checks to a time formatted as
// RFC3339Nano: a year of exactly 4 digits, a zone's hour within 0-23.
func strictRFC3339(f []byte) bool {
	if f[len("9999")] != '-' {
		return false
	}
	if f[len(f)-1] == 'Z' {
		return true
	}
	sign, hour := f[len(f)-len("Z07:00")], f[len(f)-len("07:00"):]
	return (sign < '0' || sign > '9') && 10*(hour[0]-'0')+(hour[1]-'0') < 24
}

// appendJSONString appends s as a JSON string, as json.Marshal writes it.
func appendJSONString(b []byte, s string) []byte {
	return append(appendJSONChars(append(b, '"'), s), '"')
}

const hexDigits = "0123456789abcdef"

// appendJSONChars appends s escaped as inside a JSON string by json.Marshal:
// `"` and `\` and the control characters escaped (\b, \f, \n, \r, \t by
// name, the others as \u00XX), and so are <, > and &; invalid UTF-8 becomes
// \ufffd, and U+2028 and U+2029 are escaped.
func appendJSONChars(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(b, s[start:]...)
}
