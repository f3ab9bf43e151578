package redact

import (
	"strings"
	"testing"
)

func TestURLs(t *testing.T) {
	for in, want := range map[string]string{
		"":                          "",
		"nats://c:4222":             "nats://c:4222",
		"nats://user:secret@a:4222": "nats://xxxxx@a:4222",
		"nats://user:secret@a:4222,tls://tok@b:4222,nats://c:4222":    "nats://xxxxx@a:4222,tls://xxxxx@b:4222,nats://c:4222",
		"nats://a.internal:4222, tls://router:SECRET@b.internal:4222": "nats://a.internal:4222,tls://xxxxx@b.internal:4222",
		"https://user:SECRET-pass@reseller.example/openai":            "https://xxxxx@reseller.example/openai",
		"https://user:pa/ss#w@host:8080/v1":                           "https://xxxxx@host:8080/v1",
		"https://user:p@ss@host":                                      "https://xxxxx@host",
		"https://user:bad port@host:x/v1":                             "https://xxxxx@host:x/v1",
		"user:secret@host:4222":                                       "xxxxx@host:4222",
		"tok@en://u:p@host":                                           "xxxxx@host",
		"nats://a:4222,, c-without-port":                              "nats://a:4222,, c-without-port",
	} {
		if got := URLs(in); got != want {
			t.Errorf("URLs(%q) = %q, want %q", in, got, want)
		}
	}
}

// No part of the user info survives, whatever the scheme and host look like.
func FuzzURLs(f *testing.F) {
	for _, s := range [][3]string{{"nats", "u:SECRET", "h:4222"}, {"", "tok", "b"}, {"SECRET@a", "b://u:p@", "h"},
		{"https", "user:pa/ss#w", "host/v1?x"}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, scheme, user, host string) {
		user = strings.TrimSpace(user)
		if user == "" || strings.ContainsAny(scheme+user+host, ",") || strings.Contains(host, "@") {
			return
		}
		in := scheme + "://" + user + "@" + host
		// The result keeps at most the scheme and the host.
		if got := URLs(in); strings.Contains(got, user) && !strings.Contains(scheme+"://"+redactedUser+"@"+host, user) {
			t.Fatalf("URLs(%q) = %q keeps %q", in, got, user)
		}
	})
}

func TestURLsHideUserInfo(t *testing.T) {
	got := URLs("nats://user:secret@a:4222,tls://tok@b:4222,nats://c:4222")
	if strings.Contains(got, "secret") || strings.Contains(got, "tok@") || !strings.Contains(got, "c:4222") {
		t.Errorf("URLs = %q", got)
	}
}
