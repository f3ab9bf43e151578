package adminapi

import (
	"strings"
	"testing"
)

// adminEndpoints are the master-key endpoints with a method each accepts,
// a valid body for it, and the methods in their Allow header.
var adminEndpoints = []struct {
	method, path, body, allow string
}{
	{"POST", "/api/ban", `{"credential":"openai-1"}`, "POST"},
	{"POST", "/api/unban", `{"credential":"openai-1"}`, "POST"},
	{"GET", "/api/bans", ``, "GET"},
	{"GET", "/api/fallback", ``, "GET, PUT"},
	{"PUT", "/api/fallback", `{"max_hops":3}`, "GET, PUT"},
}

func TestAdminEndpointsAcceptOnlyTheMasterKey(t *testing.T) {
	r := newRig(t)
	cases := []struct {
		name, auth string
		status     int
		msg        string
	}{
		{"no credentials", "", 401, "master key required"},
		{"basic auth", "Basic YWRtaW46YWRtaW4=", 401, "malformed credentials"},
		{"bearer without a token", "Bearer", 401, "malformed credentials"},
		{"bearer with a blank token", "Bearer    ", 401, "malformed credentials"},
		{"a bare token", masterKey, 401, "malformed credentials"},
		{"a client key", "Bearer " + clientKey, 403, "master key required"},
		{"any other key", "Bearer not-the-key", 403, "master key required"},
		{"the master key with a suffix", "Bearer " + masterKey + "x", 403, "master key required"},
	}
	for _, ep := range adminEndpoints {
		for _, c := range cases {
			t.Run(ep.method+" "+ep.path+"/"+c.name, func(t *testing.T) {
				status, h, body := r.do(ep.method, ep.path, c.auth, ep.body)
				if status != c.status {
					t.Fatalf("status %d, want %d: %s", status, c.status, body)
				}
				if got := errorMessage(t, body); got != c.msg {
					t.Errorf("message %q, want %q", got, c.msg)
				}
				if c.status == 401 && h.Get("WWW-Authenticate") == "" {
					t.Error("a 401 without WWW-Authenticate")
				}
				if strings.Contains(body, masterKey) || strings.Contains(body, clientKey) {
					t.Errorf("the answer echoes a key: %s", body)
				}
			})
		}
		t.Run(ep.method+" "+ep.path+"/master key", func(t *testing.T) {
			r.admin(ep.method, ep.path, ep.body, 200)
		})
		t.Run(ep.method+" "+ep.path+"/scheme in lower case", func(t *testing.T) {
			if status, _, body := r.do(ep.method, ep.path, "bearer "+masterKey, ep.body); status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
		})
	}
	if strings.Contains(r.logs.String(), masterKey) || strings.Contains(r.logs.String(), clientKey) {
		t.Error("a key reached the log")
	}
}

func TestWrongMethodIs405WithAllowBeforeAuth(t *testing.T) {
	r := newRig(t)
	for _, ep := range adminEndpoints {
		for _, m := range []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"} {
			if strings.Contains(ep.allow, m) {
				continue
			}
			for _, auth := range []string{"", "Bearer " + masterKey} {
				status, h, body := r.do(m, ep.path, auth, ep.body)
				if status != 405 {
					t.Fatalf("%s %s (auth %v): status %d, want 405: %s", m, ep.path, auth != "", status, body)
				}
				if got := h.Get("Allow"); got != ep.allow {
					t.Errorf("%s %s: Allow %q, want %q", m, ep.path, got, ep.allow)
				}
				if m != "HEAD" && errorMessage(t, body) != "Method Not Allowed" {
					t.Errorf("%s %s: body %s", m, ep.path, body)
				}
			}
		}
	}
}

func TestNewRejectsMissingDependencies(t *testing.T) {
	r := newRig(t)
	base := Deps{MasterKey: masterKey, Snapshot: r.live.Load, WaitFor: r.live.WaitFor, Publish: r.log.PublishControl}
	if _, err := New(base); err != nil {
		t.Fatalf("the minimal deps: %v", err)
	}
	cases := map[string]func(d *Deps){
		"no master key":         func(d *Deps) { d.MasterKey = "" },
		"no snapshot":           func(d *Deps) { d.Snapshot = nil },
		"no publish":            func(d *Deps) { d.Publish = nil },
		"no wait":               func(d *Deps) { d.WaitFor = nil },
		"a nameless credential": func(d *Deps) { d.Credentials = []Credential{{Type: "openai"}} },
		"a credential twice": func(d *Deps) {
			d.Credentials = []Credential{{Name: "a"}, {Name: "a"}}
		},
	}
	for name, change := range cases {
		d := base
		change(&d)
		if _, err := New(d); err == nil {
			t.Errorf("%s: New accepted it", name)
		} else if strings.Contains(err.Error(), masterKey) {
			t.Errorf("%s: the error holds the key: %v", name, err)
		}
	}
	// Two APIs cannot share a registry: every metric would be doubled.
	d := base
	d.Registry = r.api.Registry()
	if _, err := New(d); err == nil {
		t.Error("New registered its metrics twice on one registry")
	}
}
