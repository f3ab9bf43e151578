package proxy

import (
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 9, 21, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 2 * time.Minute, true},
		{" 7 ", 7 * time.Second, true},
		{"0", 0, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"0.001", time.Millisecond, true},
		{"86400", 24 * time.Hour, true},
		{"86401", 24 * time.Hour, true},
		{"99999999999999999999999999", 24 * time.Hour, true},
		{"Mon, 21 Sep 2026 10:00:30 GMT", 30 * time.Second, true},
		{"Monday, 21-Sep-26 10:05:00 GMT", 5 * time.Minute, true},
		{"Mon Sep 21 11:00:00 2026", time.Hour, true},
		{"Mon, 21 Sep 2026 10:00:30 +0000", 30 * time.Second, true},
		{"Mon, 21 Sep 2026 09:00:00 GMT", 0, true},
		{"Wed, 30 Sep 2026 10:00:00 GMT", 24 * time.Hour, true},
		{"", 0, false},
		{"   ", 0, false},
		{"-5", 0, false},
		{"+5", 0, false},
		{"5s", 0, false},
		{"1e3", 0, false},
		{"1.", 0, false},
		{".5", 0, false},
		{"1.2.3", 0, false},
		{"soon", 0, false},
		{"Mon, 32 Sep 2026 10:00:30 GMT", 0, false},
	} {
		got, ok := parseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "1.5", "Mon, 21 Sep 2026 10:00:30 GMT", "-1", "9999999999999999999"} {
		f.Add(s)
	}
	now := time.Date(2026, 9, 21, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseRetryAfter(s, now)
		if d < 0 || d > domain.MaxRetryAfter || (!ok && d != 0) {
			t.Fatalf("parseRetryAfter(%q) = %v, %v", s, d, ok)
		}
	})
}
