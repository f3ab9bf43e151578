package proxy

import (
	"bytes"
	"strings"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/redact"
)

// classify turns an upstream status and body into an outcome class: the
// status decides, a 200 without content becomes an empty completion, and a
// client error is a content-policy refusal or a missing model when its body
// says so.
func classify(ep endpoint, status int, body []byte) domain.Class {
	class := domain.ClassifyStatus(status)
	switch class {
	case domain.ClassOK:
		if emptyCompletion(ep, body) {
			return domain.ClassEmptyCompletion
		}
	case domain.ClassClientError:
		if contentPolicy(body) {
			return domain.ClassContentPolicy
		}
		if status == 404 && modelNotFound(body) {
			return domain.ClassModelNotFound
		}
	}
	return class
}

// classifyScanLimit is how much of an error body is searched for markers.
const classifyScanLimit = 8 << 10

func lowerPrefix(body []byte) string {
	if len(body) > classifyScanLimit {
		body = body[:classifyScanLimit]
	}
	return strings.ToLower(string(body))
}

// contentPolicy reports a refusal that is the request's fault.
func contentPolicy(body []byte) bool {
	s := lowerPrefix(body)
	for _, m := range []string{"content policy", "content management policy", "policy violation",
		"content_policy_violation", "content_filter", "responsibleaipolicyviolation"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// modelNotFound reports a 404 that names the model.
func modelNotFound(body []byte) bool {
	s := lowerPrefix(body)
	if strings.Contains(s, "model_not_found") {
		return true
	}
	return strings.Contains(s, "model") && (strings.Contains(s, "not found") ||
		strings.Contains(s, "does not exist") || strings.Contains(s, "unsupported model"))
}

// emptyCompletion reports a successful response with no content and no
// tool calls. A body it does not recognise is not empty: the proxy only
// fails over on what it understands.
func emptyCompletion(ep endpoint, body []byte) bool {
	switch ep {
	case epChat, epCompletions:
		choices := field(body, "choices")
		if choices == nil {
			return false
		}
		empty := true
		elements(choices, func(vs, ve int) bool {
			if choiceHasContent(choices[vs:ve]) {
				empty = false
				return false
			}
			return true
		})
		return empty
	case epMessages:
		return emptyItems(field(body, "content"), "text")
	case epResponses:
		return emptyItems(field(body, "output"), "reasoning")
	}
	return false
}

func choiceHasContent(choice []byte) bool {
	if nonEmpty(field(choice, "text")) {
		return true
	}
	msg := field(choice, "message")
	if msg == nil {
		msg = field(choice, "delta")
	}
	if msg == nil {
		return false
	}
	for _, k := range []string{"content", "tool_calls", "function_call", "refusal", "audio"} {
		if nonEmpty(field(msg, k)) {
			return true
		}
	}
	return false
}

// emptyItems reports an array whose items carry nothing: every item is of
// type hollow (an Anthropic text block, a Responses reasoning item) with
// an empty "text". An absent array is not judged.
func emptyItems(items []byte, hollow string) bool {
	if items == nil || items[0] != '[' {
		return false
	}
	empty := true
	elements(items, func(vs, ve int) bool {
		it := items[vs:ve]
		typ, _ := stringValue(field(it, "type"))
		if typ != hollow || nonEmpty(field(it, "text")) {
			empty = false
			return false
		}
		return true
	})
	return empty
}

// errorMessage extracts the upstream's error message from a body,
// redacted: error.message, a string error, or message; else the body
// itself. The configured keys (s, may be nil) are masked first, so the
// cut to maxMessage never leaves part of one.
func errorMessage(body []byte, s *secrets) string {
	msg := ""
	if e := field(body, "error"); e != nil {
		if s, ok := stringValue(e); ok {
			msg = s
		} else if s, ok := stringValue(field(e, "message")); ok {
			msg = s
		}
	}
	if msg == "" {
		if s, ok := stringValue(field(body, "message")); ok {
			msg = s
		}
	}
	if msg == "" {
		b := bytes.TrimSpace(body)
		if len(b) > 512 {
			b = b[:512]
		}
		msg = string(b)
	}
	return redactMessage(s.maskString(msg))
}

// maxMessage bounds an upstream message kept for logs and detail headers.
const maxMessage = 240

// redactMessage removes secrets and e-mail addresses from an upstream
// message.
func redactMessage(s string) string { return redact.N(s, maxMessage) }
