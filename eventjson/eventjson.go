// Package eventjson is the JSON codec of the event log: Encode writes an
// event as the log stores it, Decode and Decoder read one back. Outcome
// events, the bulk of the log, take hand-written paths without reflection;
// anything else goes through encoding/json, and the two give the same
// bytes (encode) and the same events (decode). Lines splits JSON Lines,
// the form of the log's outcome batches and of exported files, by one
// rule for both. It imports only domain and does no I/O. On an event's path it sits between domain and the log:
// transport/eventlog encodes what it publishes and decodes what it
// consumes (the decoded event goes on to projections), and incident reads
// and writes exported files with it.
package eventjson

import (
	"encoding/json"
	"fmt"

	"github.com/airouter/airouter/domain"
)

// Decode reads an event. It returns an error for malformed JSON; a
// well-formed event of an unknown kind decodes without error and is caught
// by domain.Event.Valid, so the caller can skip and count it.
func Decode(b []byte) (domain.Event, error) {
	return decode(b, nil)
}

// maxInternedNames bounds a Decoder's table of names.
const maxInternedNames = 4096

// Decoder decodes events as Decode does, keeping one copy of each
// credential and model name it has read (up to maxInternedNames), so that a
// stream of outcomes about the same pairs does not allocate their names
// again and again. The zero value is ready; it is not safe for concurrent
// use.
type Decoder struct {
	names map[string]string
}

// Decode reads one event, as the package's Decode does.
func (d *Decoder) Decode(b []byte) (domain.Event, error) {
	if d.names == nil {
		d.names = make(map[string]string)
	}
	return decode(b, d.names)
}

func decode(b []byte, names map[string]string) (domain.Event, error) {
	if e, ok := decodeFast(b, names); ok {
		return e, nil
	}
	var e domain.Event
	if err := json.Unmarshal(b, &e); err != nil {
		return domain.Event{}, fmt.Errorf("decode event: %w", err)
	}
	return e, nil
}
