package eventlog

import (
	"errors"
	"strings"
	"testing"

	"github.com/airouter/airouter/domain"
)

func TestSubject(t *testing.T) {
	until := t0
	tests := []struct {
		name string
		ev   domain.Event
		want string
	}{
		{"outcome", domain.Event{Kind: domain.KindOutcomeRecorded, Outcome: &domain.Outcome{Credential: "openai-1", Model: "gpt-4.1"}},
			"airouter.events.outcome.openai-1.gpt-4~2E1"},
		{"outcome with slash and space", domain.Event{Kind: domain.KindOutcomeRecorded, Outcome: &domain.Outcome{Credential: "or", Model: "meta-llama/Llama 3.1"}},
			"airouter.events.outcome.or.meta-llama/Llama~203~2E1"},
		{"ban", domain.Event{Kind: domain.KindBanImposed, Ban: &domain.Ban{Credential: "c1", Model: "claude-3.5-sonnet"}},
			"airouter.events.ban.c1.claude-3~2E5-sonnet"},
		{"wildcard ban", domain.Event{Kind: domain.KindBanImposed, Ban: &domain.Ban{Credential: "c1", Model: domain.AllModels}},
			"airouter.events.ban.c1.~2A"},
		{"unban one model", domain.Event{Kind: domain.KindBanLifted, Unban: &domain.Unban{Credential: "c1", Model: "m>x"}},
			"airouter.events.unban.c1.m~3Ex"},
		{"unban wildcard", domain.Event{Kind: domain.KindBanLifted, Unban: &domain.Unban{Credential: "c1", Model: "*"}},
			"airouter.events.unban.c1.~2A"},
		{"unban whole credential", domain.Event{Kind: domain.KindBanLifted, Unban: &domain.Unban{Credential: "c1"}},
			"airouter.events.unban.c1.~"},
		{"cooldown", domain.Event{Kind: domain.KindCooldownStarted, Cooldown: &domain.Cooldown{Credential: "c2", Model: "a~b", Until: until}},
			"airouter.events.cooldown.c2.a~7Eb"},
		{"credential-wide cooldown", domain.Event{Kind: domain.KindCooldownStarted, Cooldown: &domain.Cooldown{Credential: "c2", Model: domain.AllModels, Until: until}},
			"airouter.events.cooldown.c2.~2A"},
		{"withheld: beside the bans", domain.Event{Kind: domain.KindBanWithheld, Withheld: &domain.Withheld{Credential: "c1", Model: "gpt-4.1"}},
			"airouter.events.withheld.c1.gpt-4~2E1"},
		{"shadowed", domain.Event{Kind: domain.KindBanShadowed, Shadowed: &domain.Ban{Credential: "c1", Model: "gpt-4o"}},
			"airouter.events.shadow.c1.gpt-4o"},
		{"bench", domain.Event{Kind: domain.KindModelBenched, Bench: &domain.Bench{Model: "gpt-4o"}},
			"airouter.events.bench.gpt-4o"},
		{"unbench: the benches' subject", domain.Event{Kind: domain.KindModelUnbenched, Unbench: &domain.Unbench{Model: "gpt-4.1"}},
			"airouter.events.bench.gpt-4~2E1"},
		{"probe claim", domain.Event{Kind: domain.KindProbeClaimed, Probe: &domain.ProbeClaim{Credential: "c1", Model: "gpt-4.1"}},
			"airouter.events.probe.c1.gpt-4~2E1"},
		{"cooldown lift", domain.Event{Kind: domain.KindCooldownLifted, CooldownLift: &domain.CooldownLift{Credential: "c1", Model: domain.AllModels}},
			"airouter.events.uncool.c1.~2A"},
		{"settings", domain.Event{Kind: domain.KindFallbackSettingsChanged, Settings: &domain.FallbackSettings{MaxHops: 3}},
			"airouter.events.settings.fallback"},
		{"policy", domain.Event{Kind: domain.KindPolicyChanged, Policy: &domain.PolicyChange{Fingerprint: "abc"}},
			"airouter.events.policy"},
		{"heartbeat", domain.Event{Kind: domain.KindReplicaHeartbeat, Heartbeat: &domain.Heartbeat{Replica: "host-1.example:8080", Instance: "i"}},
			"airouter.events.replica.host-1~2Eexample:8080"},
		{"unknown kind", domain.Event{Kind: "x.y"}, ""},
		{"kind without payload", domain.Event{Kind: domain.KindBanImposed}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Subject(tt.ev); got != tt.want {
				t.Errorf("Subject = %q, want %q", got, tt.want)
			}
		})
	}
	// Every kind has a subject under the stream's subjects.
	for _, k := range domain.Kinds {
		if k == domain.KindFallbackSettingsChanged {
			continue
		}
		found := false
		for _, tt := range tests {
			if tt.ev.Kind == k && tt.want != "" {
				found = true
			}
		}
		if !found {
			t.Errorf("kind %s has no subject test", k)
		}
	}
}

func TestEscapeTokenRoundTrip(t *testing.T) {
	for _, s := range []string{
		"", "*", ">", "~", ".", "~2E", "_all_", "gpt-4.1", "a b\tc\r\nd", "meta-llama/Llama-3.1-70B",
		"модель", "emoji 🙂", "x\x00y\x7f", "trailing.", ".leading", "a..b", "~", "~~",
	} {
		tok := EscapeToken(s)
		if tok == "" || strings.ContainsAny(tok, ".*> \t\r\n") {
			t.Errorf("EscapeToken(%q) = %q: not a single subject token", s, tok)
		}
		for i := 0; i < len(tok); i++ {
			if tok[i] < '!' || tok[i] > '~' {
				t.Errorf("EscapeToken(%q) = %q: byte %#x outside printable ASCII", s, tok, tok[i])
			}
		}
		back, err := UnescapeToken(tok)
		if err != nil || back != s {
			t.Errorf("UnescapeToken(EscapeToken(%q)) = %q, %v", s, back, err)
		}
	}
	if EscapeToken("*") == EscapeToken("_all_") {
		t.Error("the wildcard collides with a model name")
	}
}

func TestUnescapeTokenRejectsBadEscapes(t *testing.T) {
	for _, tok := range []string{"a~", "a~2", "~zz", "~2e"} {
		if _, err := UnescapeToken(tok); err == nil {
			t.Errorf("UnescapeToken(%q) accepted a bad escape", tok)
		}
	}
}

func TestEscapeTokenShortensLongNames(t *testing.T) {
	long := strings.Repeat("m", 4096)
	cyrillic := strings.Repeat("я", 700)
	for _, s := range []string{long, cyrillic, long + "x", strings.Repeat(".", 60000), strings.Repeat("a", MaxTokenLen+1)} {
		tok := EscapeToken(s)
		if len(tok) > MaxTokenLen || strings.ContainsAny(tok, ".*> ") {
			t.Errorf("EscapeToken(%d bytes) = %q (%d bytes): not one token of at most %d bytes", len(s), tok, len(tok), MaxTokenLen)
		}
		if !strings.Contains(tok, shortMarker) {
			t.Errorf("EscapeToken(%d bytes) = %q: no hash marker", len(s), tok)
		}
		if _, err := UnescapeToken(tok); !errors.Is(err, ErrShortenedToken) {
			t.Errorf("UnescapeToken(%q) = %v, want ErrShortenedToken", tok, err)
		}
	}
	if EscapeToken(long) == EscapeToken(long+"x") {
		t.Error("two long names with one prefix share a token")
	}
	// The readable prefix is the escaped name's start, never a cut escape.
	tok := EscapeToken(cyrillic)
	prefix := tok[:len(tok)-len(shortMarker)-2*hashBytes]
	if back, err := UnescapeToken(prefix); !strings.HasPrefix(tok, "~D1~8F") || err != nil || !strings.HasPrefix(cyrillic, back) {
		t.Errorf("EscapeToken(cyrillic) = %q: prefix %q unescapes to %q, %v", tok, prefix, back, err)
	}
	// A name whose escaped form just fits is kept whole and reversible.
	fits := strings.Repeat("a", MaxTokenLen-3) + "."
	if tok := EscapeToken(fits); len(tok) != MaxTokenLen || strings.Contains(tok, shortMarker) {
		t.Errorf("EscapeToken(%q) = %q, want it whole", fits, tok)
	} else if back, err := UnescapeToken(tok); err != nil || back != fits {
		t.Errorf("UnescapeToken = %q, %v", back, err)
	}
	// The longest subject stays far below the server's control line.
	ev := domain.Event{Kind: domain.KindCooldownStarted, Cooldown: &domain.Cooldown{Credential: long, Model: cyrillic}}
	if n := len(Subject(ev)); n > len(subjectPrefix)+len("cooldown.")+2*MaxTokenLen+1 {
		t.Errorf("subject of %d bytes", n)
	}
}
