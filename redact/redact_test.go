package redact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Test secrets. None of them may survive String, in any of the cases below.
const (
	secOpenAI    = "sk-proj-AbCdEf0123456789GhIjKl"
	secAnthropic = "sk-ant-api03-Zy9Xw8Vu7Ts6Rq5Po4"
	secGroq      = "gsk_q1w2e3r4t5y6u7i8o9p0"
	secGoogle    = "AIzaSyD4f6G8h0J2k4L6m8N0p2R4t6V8x0Z2b4"
	secGitHub    = "ghp_A1b2C3d4E5f6G7h8I9j0"
	secHF        = "hf_aBcDeFgHiJkLmNoPqRsT"
	secNvidia    = "nvapi-Qw3Er5Ty7Ui9Op1As3"
	secJWT       = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	secHex       = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	secBearer    = "opaqueBearerValue42"
	secPlain     = "hunter2-correct-horse"
	secEscaped   = "inner-escaped-secret-7"
	secAWS       = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	secEmail     = "jane.doe+llm@example.co.uk"
	secQuery     = "qKey-1234abcd"
)

var testSecrets = []string{secOpenAI, secAnthropic, secGroq, secGoogle, secGitHub, secHF, secNvidia,
	secJWT, secHex, secBearer, secPlain, secEscaped, secAWS, secEmail, secQuery}

var redactCases = []struct{ in, want string }{
	{"Authorization: Bearer " + secBearer, "Authorization: Bearer [redacted]"},
	{"upstream said: bearer " + secBearer + " rejected", "upstream said: bearer [redacted] rejected"},
	{"api_key=" + secPlain + "&model=gpt-4o", "api_key=[redacted]&model=gpt-4o"},
	{"access_token: " + secPlain, "access_token: [redacted]"},
	{"token=" + secPlain + "; path=/", "token=[redacted]; path=/"},
	{"client_secret = '" + secPlain + "'", "client_secret = '[redacted]'"},
	{"x-api-key: " + secPlain, "x-api-key: [redacted]"},
	{"X-Goog-Api-Key: " + secPlain, "X-Goog-Api-Key: [redacted]"},
	{"authorization=Basic " + secPlain, "authorization=Basic [redacted]"},
	{`{"error":{"message":"bad key","api_key":"` + secPlain + `","code":401}}`,
		`{"error":{"message":"bad key","api_key":"[redacted]","code":401}}`},
	{`{"headers": {"Authorization": "Bearer ` + secBearer + `"}}`, `{"headers": {"Authorization": "[redacted]"}}`},
	{`{"body":"{\"secret\":\"` + secEscaped + `\",\"n\":1}"}`, `{"body":"{\"secret\":\"[redacted]\",\"n\":1}"}`},
	{"Incorrect API key provided: " + secOpenAI + ".", "Incorrect API key provided: [redacted-key]."},
	{"key " + secAnthropic + " is disabled", "key [redacted-key] is disabled"},
	{"groq " + secGroq + " google " + secGoogle, "groq [redacted-key] google [redacted-key]"},
	{"github " + secGitHub + " hf " + secHF + " nv " + secNvidia, "github [redacted-key] hf [redacted-key] nv [redacted-key]"},
	{"https://generativelanguage.googleapis.com/v1/models?key=" + secQuery + "&alt=sse",
		"https://generativelanguage.googleapis.com/v1/models?key=[redacted]&alt=sse"},
	{"jwt " + secJWT + " expired", "jwt [redacted-token] expired"},
	{"signature " + secHex, "signature [redacted-token]"},
	{"aws " + secAWS, "aws [redacted-token]"},
	{"contact " + secEmail + " for access", "contact [redacted-email] for access"},
	{"line one\n\tline two\r\n\x00  three  ", "line one line two three"},
	// What must survive: ordinary error text, ids, paths, counts.
	{"max_tokens: 4096 exceeds the limit; prompt_tokens=12", "max_tokens: 4096 exceeds the limit; prompt_tokens=12"},
	{"request 123e4567-e89b-12d3-a456-426614174000 failed", "request 123e4567-e89b-12d3-a456-426614174000 failed"},
	{"projects/my-project/locations/us-central1/publishers/google/models/gemini-1.5-pro not found",
		"projects/my-project/locations/us-central1/publishers/google/models/gemini-1.5-pro not found"},
	{"Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM)",
		"Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM)"},
	{"task-12345678 and risk-assessment ok", "task-12345678 and risk-assessment ok"},
	{"", ""},
}

func TestRedact(t *testing.T) {
	for _, tc := range redactCases {
		got := N(tc.in, 0)
		if got != tc.want {
			t.Errorf("N(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
		if again := N(got, 0); again != got {
			t.Errorf("redacting %q again changed it to %q", got, again)
		}
		for _, s := range testSecrets {
			if strings.Contains(got, s) || (len(s) > 12 && strings.Contains(got, s[len(s)-12:])) {
				t.Errorf("secret %q survives in %q", s, got)
			}
		}
	}
}

func TestRedactNoSecretSurvivesTogether(t *testing.T) {
	var all strings.Builder
	for _, tc := range redactCases {
		all.WriteString(tc.in)
		all.WriteString(" | ")
	}
	got := N(all.String(), 0)
	for _, s := range testSecrets {
		if strings.Contains(got, s) {
			t.Errorf("secret %q survives in the joined text", s)
		}
	}
}

func TestRedactLimit(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"this is longer than ten", 10, "this is…"},
		{"ééééééé", 8, "éé…"},
		{"abcdef", 3, "abc"},
		{"abcdef", 0, "abcdef"},
	} {
		if got := N(tc.in, tc.limit); got != tc.want {
			t.Errorf("N(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
	long := strings.Repeat("word ", 10_000) + "api_key=" + secPlain
	if got := String(long); len(got) > DefaultLimit || strings.Contains(got, secPlain) {
		t.Errorf("String of a long text: %d bytes, or the secret survived", len(got))
	}
	// A secret the bounding cut goes through must not leave a readable part.
	cutThrough := strings.Repeat("x ", 4*8+30) + secGoogle
	if got := N(cutThrough, 8); strings.Contains(got, "AIza") {
		t.Errorf("part of a cut key survives: %q", got)
	}
}

func FuzzRedact(f *testing.F) {
	for _, tc := range redactCases {
		f.Add(tc.in, 64)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		limit %= 4096
		got := N(s, limit)
		if limit > 0 && len(got) > limit {
			t.Fatalf("N(%q, %d) is %d bytes", s, limit, len(got))
		}
		if !utf8.ValidString(got) || strings.ContainsAny(got, "\r\n\x00") {
			t.Fatalf("N(%q) = %q is not header-safe", s, got)
		}
	})
}

func BenchmarkRedact(b *testing.B) {
	for name, body := range map[string]string{
		"openai-key-error": `{"error":{"message":"Incorrect API key provided: ` + secOpenAI +
			`. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}`,
		"clean-rate-limit": `{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29876, Requested 512. Please try again in 1.2s.","type":"tokens","code":"rate_limit_exceeded"}}`,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				_ = String(body)
			}
		})
	}
}
