package sysmon

import (
	"slices"
	"testing"
)

func TestWith(t *testing.T) {
	for _, c := range []struct {
		name      string
		env, want []string
		added     bool
		steady    bool // Steady of the result's GODEBUG
	}{
		{"no GODEBUG", []string{"PATH=/bin"}, []string{"PATH=/bin", "GODEBUG=" + Setting}, true, true},
		{"empty GODEBUG", []string{"GODEBUG=", "HOME=/"}, []string{"GODEBUG=" + Setting, "HOME=/"}, true, true},
		{"other settings kept", []string{"GODEBUG=panicnil=1,http2client=0"},
			[]string{"GODEBUG=panicnil=1,http2client=0," + Setting}, true, true},
		{"the operator's schedtrace=0", []string{"GODEBUG=schedtrace=0"}, []string{"GODEBUG=schedtrace=0"}, false, false},
		{"the operator's schedtrace among others", []string{"GODEBUG=gctrace=1, schedtrace=1000"},
			[]string{"GODEBUG=gctrace=1, schedtrace=1000"}, false, false},
		{"already set", []string{"GODEBUG=" + Setting}, []string{"GODEBUG=" + Setting}, false, true},
		{"the first GODEBUG is the one read", []string{"GODEBUG=gctrace=1", "GODEBUG=schedtrace=0"},
			[]string{"GODEBUG=gctrace=1," + Setting, "GODEBUG=schedtrace=0"}, true, true},
		{"a name that only ends in GODEBUG", []string{"XGODEBUG=schedtrace=0"},
			[]string{"XGODEBUG=schedtrace=0", "GODEBUG=" + Setting}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := slices.Clone(c.env)
			got, added := With(c.env)
			if !slices.Equal(got, c.want) || added != c.added {
				t.Errorf("With(%q) = %q, %v; want %q, %v", c.env, got, added, c.want, c.added)
			}
			if !slices.Equal(c.env, before) {
				t.Errorf("With changed its argument to %q", c.env)
			}
			if s := Steady(value(got)); s != c.steady {
				t.Errorf("Steady(%q) = %v", value(got), s)
			}
		})
	}
}

func TestWithout(t *testing.T) {
	for _, c := range []struct {
		name      string
		env, want []string
	}{
		{"no GODEBUG", []string{"PATH=/bin"}, []string{"PATH=/bin"}},
		{"only the setting: GODEBUG goes", []string{"PATH=/bin", "GODEBUG=" + Setting, "HOME=/"}, []string{"PATH=/bin", "HOME=/"}},
		{"the others stay", []string{"GODEBUG=panicnil=1," + Setting + ",gctrace=1"}, []string{"GODEBUG=panicnil=1,gctrace=1"}},
		{"the operator's schedtrace stays", []string{"GODEBUG=schedtrace=1000"}, []string{"GODEBUG=schedtrace=1000"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := slices.Clone(c.env)
			if got := Without(c.env); !slices.Equal(got, c.want) {
				t.Errorf("Without(%q) = %q, want %q", c.env, got, c.want)
			}
			if !slices.Equal(c.env, before) {
				t.Errorf("Without changed its argument to %q", c.env)
			}
		})
	}
	// What With adds, Without takes back.
	for _, env := range [][]string{{"A=1"}, {"GODEBUG=gctrace=1", "A=1"}} {
		with, _ := With(env)
		if got := Without(with); !slices.Equal(got, env) {
			t.Errorf("Without(With(%q)) = %q", env, got)
		}
	}
}

// value is environ's GODEBUG as the runtime reads it.
func value(environ []string) string {
	_, v := lookup(environ)
	return v
}
