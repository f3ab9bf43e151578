package adminapi

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// healthAt reads /health with the query q.
func (r *rig) healthAt(q string) (int, Health) {
	r.t.Helper()
	status, _, body := r.do("GET", "/health?"+q, "", "")
	var h Health
	decode(r.t, body, &h)
	return status, h
}

// The filters keep the entries asked for, combine, and leave the status and
// the counts those of the whole pool.
func TestHealthFilters(t *testing.T) {
	r := newRig(t)
	mixedPool(r)
	_, all := r.health()
	cases := []struct {
		q           string
		credentials []string
		models      []string
		benched     []string
	}{
		{"credential=openai-2", []string{"openai-2"}, []string{"openai-2:gpt-4o"}, []string{"gpt-4o-mini"}},
		{"model=gpt-4o-mini", []string{"openai-1"}, []string{"openai-1:gpt-4o-mini"}, []string{"gpt-4o-mini"}},
		{"model=gpt-4o", []string{"openai-1", "openai-2", "relay"}, []string{"openai-1:gpt-4o", "openai-2:gpt-4o", "relay:gpt-4o"}, nil},
		{"banned=true", []string{"claude-1", "openai-1"}, []string{"claude-1:claude-sonnet", "openai-1:gpt-4o", "openai-1:gpt-4o-mini"}, []string{"gpt-4o-mini"}},
		{"banned=false", []string{"openai-2", "relay"}, []string{"openai-2:gpt-4o", "relay:gpt-4o"}, []string{"gpt-4o-mini"}},
		{"credential=claude-1&banned=true", []string{"claude-1"}, []string{"claude-1:claude-sonnet"}, []string{"gpt-4o-mini"}},
		{"credential=openai-1&model=gpt-4o&banned=true", []string{"openai-1"}, []string{"openai-1:gpt-4o"}, nil},
		{"credential=relay&banned=true", nil, nil, []string{"gpt-4o-mini"}},
	}
	for _, c := range cases {
		t.Run(c.q, func(t *testing.T) {
			status, h := r.healthAt(c.q)
			if status != 200 || h.Status != all.Status || h.TotalCredentials != all.TotalCredentials ||
				h.CredentialsAvailable != all.CredentialsAvailable || h.BannedPairs != all.BannedPairs {
				t.Fatalf("status %d %q, counts %d/%d/%d; want the whole pool's 200 %q %d/%d/%d", status, h.Status,
					h.TotalCredentials, h.CredentialsAvailable, h.BannedPairs, all.Status, all.TotalCredentials, all.CredentialsAvailable, all.BannedPairs)
			}
			if got := slices.Sorted(maps.Keys(h.Credentials)); !slices.Equal(got, c.credentials) {
				t.Errorf("credentials %v, want %v", got, c.credentials)
			}
			if got := slices.Sorted(maps.Keys(h.Models)); !slices.Equal(got, c.models) {
				t.Errorf("models %v, want %v", got, c.models)
			}
			if got := slices.Sorted(maps.Keys(h.BenchedModels)); !slices.Equal(got, c.benched) {
				t.Errorf("benched %v, want %v", got, c.benched)
			}
			for k, m := range h.Models {
				if !equalModel(m, all.Models[k]) {
					t.Errorf("%s is %+v filtered, %+v unfiltered", k, m, all.Models[k])
				}
			}
		})
	}
}

func equalModel(x, y ModelHealth) bool {
	return x.Credential == y.Credential && x.Model == y.Model && x.IsBanned == y.IsBanned && maps.Equal(x.ErrorCodeCounts, y.ErrorCodeCounts)
}

// A filter that cannot be read is a 400 naming the parameter and value.
func TestHealthFilterErrors(t *testing.T) {
	r := newRig(t)
	cases := []struct{ q, want string }{
		{"credentials=openai-1", `unknown query parameter "credentials"`},
		{"banned=maybe", `banned="maybe"`},
		{"credential=nope", `credential "nope" in /health?credential= is not configured`},
		{"model=", "query parameter model on /health is empty"},
		{"model=a&model=b", "model is given 2 times"},
		{"at=yesterday&model=x", `at: "yesterday"`},
	}
	for _, c := range cases {
		status, _, body := r.do("GET", "/health?"+c.q, "", "")
		if msg := errorMessage(t, body); status != 400 || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %q, want 400 naming %q", c.q, status, msg, c.want)
		}
	}
}
