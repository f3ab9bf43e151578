package apierror

import (
	"encoding/json"
	"testing"
)

func TestTypes(t *testing.T) {
	cases := []struct {
		status            int
		openAI, anthropic string
	}{
		{400, "invalid_request_error", "invalid_request_error"},
		{401, "authentication_error", "authentication_error"},
		{402, "insufficient_quota", "api_error"},
		{403, "permission_denied", "permission_error"},
		{404, "not_found_error", "not_found_error"},
		{405, "invalid_request_error", "invalid_request_error"},
		{408, "timeout_error", "api_error"},
		{413, "invalid_request_error", "request_too_large"},
		{429, "rate_limit_error", "rate_limit_error"},
		{500, "server_error", "api_error"},
		{502, "api_error", "api_error"},
		{503, "server_error", "api_error"},
		{504, "timeout_error", "api_error"},
		{529, "server_error", "overloaded_error"},
	}
	for _, c := range cases {
		o, a := Types(c.status)
		if o != c.openAI || a != c.anthropic {
			t.Errorf("Types(%d) = %q, %q; want %q, %q", c.status, o, a, c.openAI, c.anthropic)
		}
		if OpenAIType(c.status) != o || AnthropicType(c.status) != a {
			t.Errorf("OpenAIType/AnthropicType(%d) disagree with Types", c.status)
		}
	}
}

// anthropicBody is the body the Anthropic shape sits in.
type anthropicBody struct {
	Type  string    `json:"type"`
	Error Anthropic `json:"error"`
}

func TestShapes(t *testing.T) {
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"openai without a code", OpenAIBody{Error: NewOpenAI(404, "Not Found", "")},
			`{"error":{"message":"Not Found","type":"not_found_error","param":null,"code":null}}`},
		{"openai with a code", OpenAIBody{Error: NewOpenAI(401, "bad key", "invalid_api_key")},
			`{"error":{"message":"bad key","type":"authentication_error","param":null,"code":"invalid_api_key"}}`},
		{"anthropic without a code", anthropicBody{Type: "error", Error: NewAnthropic(429, "slow down", "")},
			`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`},
		{"anthropic with a code", anthropicBody{Type: "error", Error: NewAnthropic(404, "no such model", "model_not_found")},
			`{"type":"error","error":{"type":"not_found_error","message":"no such model","code":"model_not_found"}}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, b, c.want)
		}
	}
}
