package config

import "time"

// ladder checks a wait that doubles from base up to max, the keys baseKey
// and maxKey of the section at path p: max 0 is invalid, since max is what
// bounds the ladder (bounds names what it bounds, def is its default), and
// base may not be above max.
func (c *checker) ladder(p, baseKey, maxKey string, base, max time.Duration, bounds string, def time.Duration) {
	switch {
	case max == 0:
		c.add(p+maxKey, "0 is invalid: it bounds %s (default %s)", bounds, def)
	case base > max:
		c.add(p+baseKey, "%s is above %s %s", base, p+maxKey, max)
	}
}
