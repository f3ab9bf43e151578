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
		{"the operator's schedtrace among others", []string{"GODEBUG=gctrace=1,schedtrace=1000"},
			[]string{"GODEBUG=gctrace=1,schedtrace=1000"}, false, true},
		{"a key the runtime does not read as schedtrace", []string{"GODEBUG= schedtrace=5,schedtrace,"},
			[]string{"GODEBUG= schedtrace=5,schedtrace,," + Setting}, true, true},
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

// Steady reads GODEBUG as the runtime does: the last schedtrace entry, a
// number of ms above 0 that fits an int32. Setting is such an entry.
func TestSteady(t *testing.T) {
	for value, want := range map[string]bool{
		Setting:                                 true,
		"schedtrace=1000":                       true,
		"":                                      false,
		"schedtrace=0":                          false,
		Setting + ",schedtrace=0":               false,
		"schedtrace=0," + Setting:               true,
		"schedtrace=2147483648":                 false, // past int32: the runtime ignores it
		"schedtrace=-1":                         false,
		"schedtrace":                            false,
		" schedtrace=1000":                      false,
		"gctrace=1,schedtrace=5,http2client=0":  true,
		"gctrace=1,,schedtrace=x,http2client=0": false,
	} {
		if got := Steady(value); got != want {
			t.Errorf("Steady(%q) = %v, want %v", value, got, want)
		}
	}
	if !Ours(Setting) || Ours("schedtrace=1000") || Ours(Setting+",schedtrace=1000") || Ours("") {
		t.Error("Ours tells Setting from an operator's schedtrace wrongly")
	}
}

// value is environ's GODEBUG as the runtime reads it.
func value(environ []string) string {
	_, v := lookup(environ)
	return v
}
