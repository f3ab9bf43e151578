package adminapi

import "strconv"

// statusDigits is every status code from 100 to 599 written out in order,
// three digits each, so a status label (an attempt's, a code in /health's
// banned error counts) is a slice of it rather than a string formatted
// each time. It is one string, so the collector
// has a single pointer to follow where a table of labels would have 500.
type statusDigits string

func newStatusDigits() statusDigits {
	b := make([]byte, 0, 3*500)
	for code := 100; code < 600; code++ {
		b = strconv.AppendInt(b, int64(code), 10)
	}
	return statusDigits(b)
}

// label is status as a metric label: its decimal digits.
func (d statusDigits) label(status int) string {
	if status < 100 || status > 599 {
		return strconv.Itoa(status)
	}
	i := 3 * (status - 100)
	return string(d[i : i+3])
}
