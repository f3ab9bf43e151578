package domain

import "fmt"

// MaxModelNameLen is the longest model name, in bytes, that a client (the
// proxy's "model" field) or an operator (/api/ban, /api/unban) may send.
// A model name travels in events, subjects, metric labels and log lines;
// real model ids are far shorter (the longest seen are under 100 bytes).
const MaxModelNameLen = 256

// ErrModelNameTooLong reads after the name it describes, so the proxy and
// the admin API word their messages alike.
var ErrModelNameTooLong = fmt.Errorf("is longer than %d bytes", MaxModelNameLen)

// CheckModelName says what is wrong with name as a model name from a client
// or an operator: ErrModelNameTooLong, or nil.
func CheckModelName(name string) error {
	if len(name) > MaxModelNameLen {
		return ErrModelNameTooLong
	}
	return nil
}
