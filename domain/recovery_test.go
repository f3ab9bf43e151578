package domain

import (
	"testing"
	"time"
)

// Gap doubles from ProbeAfter, stops at ProbeMax when there is one, and
// without one never passes the largest Duration, however many intervals.
func TestRecoveryGap(t *testing.T) {
	pow2 := time.Duration(1 << 30) // doubles to exactly 1<<62 after 32 steps
	cases := []struct {
		name string
		pol  RecoveryPolicy
		n    int
		want time.Duration
	}{
		{"first", RecoveryPolicy{ProbeAfter: time.Minute}, 0, time.Minute},
		{"doubles", RecoveryPolicy{ProbeAfter: time.Minute}, 3, 8 * time.Minute},
		{"capped", RecoveryPolicy{ProbeAfter: time.Minute, ProbeMax: 5 * time.Minute}, 3, 5 * time.Minute},
		{"cap below the first", RecoveryPolicy{ProbeAfter: time.Minute, ProbeMax: time.Second}, 0, time.Second},
		{"power of two at the top", RecoveryPolicy{ProbeAfter: pow2}, 40, 1 << 62},
		{"no cap, many intervals", RecoveryPolicy{ProbeAfter: time.Minute}, 1000, time.Minute << 27},
	}
	for _, c := range cases {
		got := c.pol.Gap(c.n)
		if got != c.want {
			t.Errorf("%s: Gap(%d) = %v, want %v", c.name, c.n, got, c.want)
		}
		if got <= 0 {
			t.Errorf("%s: Gap(%d) = %d wrapped around", c.name, c.n, int64(got))
		}
	}
}
