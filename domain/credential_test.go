package domain

import (
	"errors"
	"testing"
)

func TestCleanBaseURL(t *testing.T) {
	cases := []struct {
		raw, want string
		err       error
	}{
		{"https://api.openai.com/v1", "https://api.openai.com", nil},
		{"  http://h:8000/v1/  ", "http://h:8000", nil},
		{"http://h/prefix/", "http://h/prefix", nil},
		{"HTTPS://h", "HTTPS://h", nil},
		{"ftp://x", "", ErrBaseURLScheme},
		{"not a url at all", "", ErrBaseURLScheme},
		{"http://", "", ErrBaseURLNoHost},
		{"https://c.example/v1?x=1", "", ErrBaseURLHasQuery},
		{"https://c.example/#frag", "", ErrBaseURLHasQuery},
		{"http://[::1", "", ErrBaseURLNotURL},
	}
	for _, c := range cases {
		got, err := CleanBaseURL(c.raw)
		if got != c.want || !errors.Is(err, c.err) {
			t.Errorf("CleanBaseURL(%q) = %q, %v; want %q, %v", c.raw, got, err, c.want, c.err)
		}
	}
}

func TestCredentialNamesAndTypes(t *testing.T) {
	for _, name := range []string{"a", "openai-1", "Relay_2"} {
		if !ValidCredentialName(name) {
			t.Errorf("%q rejected", name)
		}
	}
	for _, name := range []string{"", "a.b", "a b", "a/b", "é", "a*"} {
		if ValidCredentialName(name) {
			t.Errorf("%q accepted", name)
		}
	}
	for _, typ := range []CredentialType{CredentialOpenAI, CredentialAnthropic, CredentialProxy} {
		if !typ.Valid() {
			t.Errorf("%q invalid", typ)
		}
	}
	for _, typ := range []CredentialType{"", "vllm", "OpenAI"} {
		if typ.Valid() {
			t.Errorf("%q valid", typ)
		}
	}
}
