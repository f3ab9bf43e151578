package proxy

import "bytes"

// tokenCount accumulates the usage a response reports. OpenAI bodies give
// total_tokens; Anthropic and Responses give input and output tokens, a
// stream possibly in several frames (input at the start, output at the
// end), so the largest of each is kept. reasoning and cached are the
// parts of output and input the response details: OpenAI's
// completion_tokens_details.reasoning_tokens and
// prompt_tokens_details.cached_tokens (output_tokens_details and
// input_tokens_details in Responses), Anthropic's cache_read_input_tokens.
type tokenCount struct {
	total, in, out, reasoning, cached int64
}

// add reads one usage object.
func (t *tokenCount) add(u []byte) {
	if isNull(u) {
		return
	}
	members(u, func(k []byte, vs, ve int) bool {
		switch string(k) {
		case "total_tokens":
			t.total = max(t.total, intValue(u[vs:ve]))
		case "input_tokens", "prompt_tokens":
			t.in = max(t.in, intValue(u[vs:ve]))
		case "output_tokens", "completion_tokens":
			t.out = max(t.out, intValue(u[vs:ve]))
		case "cache_read_input_tokens":
			t.cached = max(t.cached, intValue(u[vs:ve]))
		case "prompt_tokens_details", "input_tokens_details":
			t.cached = max(t.cached, intValue(field(u[vs:ve], "cached_tokens")))
		case "completion_tokens_details", "output_tokens_details":
			t.reasoning = max(t.reasoning, intValue(field(u[vs:ve], "reasoning_tokens")))
		}
		return true
	})
}

func (t *tokenCount) tokens() int64 {
	if t.total > 0 {
		return t.total
	}
	return t.in + t.out
}

// addEvent reads the usage of one JSON document: top level, or nested in
// "message" (Anthropic message_start) or "response" (Responses events).
func (t *tokenCount) addEvent(doc []byte) {
	members(doc, func(k []byte, vs, ve int) bool {
		switch string(k) {
		case "usage":
			t.add(doc[vs:ve])
		case "message", "response":
			if doc[vs] == '{' {
				t.add(field(doc[vs:ve], "usage"))
			}
		}
		return true
	})
}

// bodyUsage is the usage of a whole response body.
func bodyUsage(body []byte) tokenCount {
	var t tokenCount
	t.addEvent(body)
	return t
}

// bodyTokens is the token count of a whole response body.
func bodyTokens(body []byte) int64 {
	t := bodyUsage(body)
	return t.tokens()
}

// countTokens hands the usage of an answered attempt to the metrics; a
// response that reported none counts nothing.
func (p *Proxy) countTokens(credential, model string, t tokenCount) {
	if t.in|t.out|t.reasoning|t.cached == 0 {
		return
	}
	p.metrics.Tokens(credential, model, t.in, t.out, t.reasoning, t.cached)
}

// sseUsage finds usage in a relayed event stream. Only lines that mention
// "usage" are parsed; a line cut between two reads is carried over, up to
// a bound.
type sseUsage struct {
	carry  []byte
	counts tokenCount
}

const maxCarry = 1 << 20

// usageKey is the key whose object sseUsage parses.
var usageKey = []byte(`"usage"`)

// usageObject reports whether b holds the key "usage" with an object for
// its value: only such a line can add tokens (tokenCount.add reads
// objects). The "usage":null every chat chunk carries once include_usage
// is on (includeUsage asks for it) adds nothing, so it is not parsed. It
// looks for `usage"` and then the quote before it: in JSON 'u' is far
// rarer than '"', which bytes.Index would otherwise stop at dozens of
// times a chunk.
func usageObject(b []byte) bool {
	tail := usageKey[1:]
	for {
		i := bytes.Index(b, tail)
		if i < 0 {
			return false
		}
		if i > 0 && b[i-1] == '"' {
			// skipWS, not bytes.TrimLeft, which builds a set of its cut
			// bytes on every call.
			v := b[i+len(tail):]
			if k := skipWS(v, 0); k < len(v) && v[k] == ':' {
				if k = skipWS(v, k+1); k < len(v) && v[k] == '{' {
					return true
				}
			}
		}
		b = b[i+len(tail)-1:] // from the closing quote, which may open the next key
	}
}

func (s *sseUsage) feed(b []byte) {
	// Most chunks hold no usage object: with nothing carried over, none of
	// their whole lines needs parsing, only the line cut at the end needs
	// keeping (a usage object cut by the read is in it).
	if len(s.carry) == 0 && !usageObject(b) {
		b = b[bytes.LastIndexByte(b, '\n')+1:]
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(s.carry)+len(b) <= maxCarry {
				s.carry = append(s.carry, b...)
			}
			return
		}
		line := b[:i]
		if len(s.carry) > 0 {
			if len(s.carry)+len(line) <= maxCarry {
				line = append(s.carry, line...)
			}
			s.carry = s.carry[:0]
		}
		s.line(line)
		b = b[i+1:]
	}
}

func (s *sseUsage) line(line []byte) {
	if !usageObject(line) {
		return
	}
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		data = line // ndjson
	}
	s.counts.addEvent(bytes.TrimSpace(data))
}
