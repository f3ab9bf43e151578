package eventjson

import "bytes"

// JSON Lines, the form in which the log's outcome batches and the exported
// log hold events: one event a line, each line ended by "\n" (the last may
// go without); the whitespace around a line, the "\r" of a "\r\n" ending
// included, is not part of it, and a blank line holds no event.

// TrimLine is one line of JSON Lines, given without its "\n", as the event
// it holds: without the whitespace around it; empty for a blank line.
func TrimLine(raw []byte) []byte { return bytes.TrimSpace(raw) }

// Lines calls fn with each line of data that holds an event (as TrimLine
// gives it, blank lines skipped), in order, until fn returns false. It does
// not allocate: each line is a part of data.
func Lines(data []byte, fn func(line []byte) bool) {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if line = TrimLine(line); len(line) > 0 && !fn(line) {
			return
		}
	}
}

// CountLines is how many lines Lines hands to fn when fn never stops it.
func CountLines(data []byte) int {
	n := 0
	Lines(data, func([]byte) bool { n++; return true })
	return n
}
