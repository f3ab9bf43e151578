// Package apierror holds the error bodies airouter writes itself: one
// table from an HTTP status to the error type, and the two shapes clients
// parse, OpenAI's {"error":{"message","type","param","code"}} and
// Anthropic's {"type":"error","error":{"type","message"}}. The proxy and
// the admin API both answer with them, so a status means the same type on
// every route. It imports nothing of ours and writes nothing itself: it
// builds values the HTTP surfaces encode. It is not on an event's path;
// an error body ends a client's request, while the attempt behind it is
// reported as an outcome by transport/proxy.
package apierror

// Types returns the error type a status is reported as, in the OpenAI shape
// and in the Anthropic shape. The OpenAI column follows OpenAI's documented
// types; anything unlisted is a server error.
func Types(status int) (openAI, anthropic string) {
	switch status {
	case 400, 405:
		return "invalid_request_error", "invalid_request_error"
	case 401:
		return "authentication_error", "authentication_error"
	case 402:
		return "insufficient_quota", "api_error"
	case 403:
		return "permission_denied", "permission_error"
	case 404:
		return "not_found_error", "not_found_error"
	case 408, 504:
		return "timeout_error", "api_error"
	case 413:
		return "invalid_request_error", "request_too_large"
	case 429:
		return "rate_limit_error", "rate_limit_error"
	case 502:
		return "api_error", "api_error"
	case 529:
		return "server_error", "overloaded_error"
	}
	return "server_error", "api_error"
}

// OpenAIType is the OpenAI-shape type of a status.
func OpenAIType(status int) string {
	t, _ := Types(status)
	return t
}

// AnthropicType is the Anthropic-shape type of a status.
func AnthropicType(status int) string {
	_, t := Types(status)
	return t
}

// OpenAI is the "error" object of the OpenAI shape. Param is always null
// here; Code is null unless the error has a machine-readable code.
type OpenAI struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// NewOpenAI is the OpenAI-shape error for a status; code "" is null.
func NewOpenAI(status int, message, code string) OpenAI {
	e := OpenAI{Message: message, Type: OpenAIType(status)}
	if code != "" {
		e.Code = &code
	}
	return e
}

// OpenAIBody is the whole OpenAI-shape body.
type OpenAIBody struct {
	Error OpenAI `json:"error"`
}

// Anthropic is the "error" object of the Anthropic shape, which sits in
// {"type":"error","error":{...}}; Code is left out when empty.
type Anthropic struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
}

// NewAnthropic is the Anthropic-shape error for a status.
func NewAnthropic(status int, message, code string) Anthropic {
	return Anthropic{Type: AnthropicType(status), Message: message, Code: code}
}
