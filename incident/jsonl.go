package incident

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/eventjson"
)

// The export format is JSON Lines: one event a line, in log order. A line is
// the event's JSON exactly as eventjson.Encode writes it (the payload of the
// NATS message, or one line of an outcome batch), with the event's log
// position added as the first members: "seq", and "index" for the second
// and later events of a batch message. An event this version could not read
// is a line holding only its position, so a replay of the file counts it as
// the log does. Readers of the domain event ignore "seq" and "index" (they
// are not fields of domain.Event); a line without "seq" takes the previous
// line's seq plus one.
//
//	{"seq":41,"v":1,"kind":"outcome.recorded","at":"2026-11-29T03:11:23.5Z","outcome":{...}}
//	{"seq":41,"index":1,"v":1,"kind":"outcome.recorded","at":"2026-11-29T03:11:23.6Z","outcome":{...}}
//	{"seq":44,"v":1,"kind":"ban.imposed","id":"f2b/cred-a/gpt-4o/41.1","at":"...","ban":{...}}

// maxLine bounds one line of an exported file (a NATS message is at most
// 8 MiB in the embedded server).
const maxLine = 8 << 20

// AppendLine appends ev as one export line, newline included.
func AppendLine(dst []byte, ev domain.Event) ([]byte, error) {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, ev.Seq, 10)
	if ev.Index > 0 {
		dst = append(dst, `,"index":`...)
		dst = strconv.AppendUint(dst, uint64(ev.Index), 10)
	}
	if ev.Kind == "" {
		return append(dst, "}\n"...), nil
	}
	b, err := eventjson.Encode(ev)
	if err != nil {
		return dst, fmt.Errorf("encode the event at %s: %w", ev.Pos(), err)
	}
	if len(b) < 2 || b[0] != '{' {
		return dst, fmt.Errorf("encode the event at %s: not a JSON object", ev.Pos())
	}
	if len(b) > 2 {
		dst = append(dst, ',')
	}
	dst = append(dst, b[1:]...)
	return append(dst, '\n'), nil
}

// LineReader reads an exported file event by event.
type LineReader struct {
	r        *bufio.Reader
	line     int
	prev     uint64
	bad      int
	firstBad int
	long     []byte
}

// NewLineReader reads the export lines of r.
func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 1<<20)}
}

// NotJSON is how many lines so far were not JSON and were skipped, and the
// line number of the first (0 when there is none).
func (l *LineReader) NotJSON() (lines, first int) { return l.bad, l.firstBad }

// Next returns the next event: decoded, or, when the line is JSON but not
// an event this version understands, a skip marker (empty Kind, position
// only), as a log delivers it. Lines that are not JSON are counted (NotJSON)
// and skipped. It returns io.EOF at the end.
func (l *LineReader) Next() (domain.Event, error) {
	for {
		b, err := l.readLine()
		if err != nil {
			return domain.Event{}, err
		}
		l.line++
		if b = eventjson.TrimLine(b); len(b) == 0 {
			continue // a blank line holds no event
		}
		pos, ok := linePos(b)
		if !ok {
			l.bad++
			if l.firstBad == 0 {
				l.firstBad = l.line
			}
			continue
		}
		if pos.Seq == 0 {
			pos = domain.Pos{Seq: l.prev + 1}
		}
		l.prev = pos.Seq
		ev, err := eventjson.Decode(b)
		if err != nil || ev.Valid() != nil {
			return domain.Event{Seq: pos.Seq, Index: pos.Index}, nil
		}
		ev.Seq, ev.Index = pos.Seq, pos.Index
		return ev, nil
	}
}

// readLine returns the next line without its newline; the bytes are valid
// until the next call.
func (l *LineReader) readLine() ([]byte, error) {
	b, err := l.r.ReadSlice('\n')
	if err == nil || (errors.Is(err, io.EOF) && len(b) > 0) {
		return b, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	l.long = append(l.long[:0], b...)
	for {
		b, err = l.r.ReadSlice('\n')
		l.long = append(l.long, b...)
		if len(l.long) > maxLine {
			return nil, fmt.Errorf("line %d is longer than %d bytes", l.line+1, maxLine)
		}
		switch {
		case err == nil || errors.Is(err, io.EOF):
			return l.long, nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err
		}
	}
}

// linePos reads a line's "seq" and "index": quickly when they lead, as
// export writes them, else by decoding the line. It reports false when the
// line is not a JSON object; a line without "seq" gives seq 0. It is its
// own reader because seq and index belong to the export format, not to the
// event the codec reads; it knows only the leading form export writes and
// leaves every other form to encoding/json.
func linePos(b []byte) (domain.Pos, bool) {
	if seq, rest, ok := leadingNumber(b, `{"seq":`); ok {
		if rest[0] != ',' || !bytes.HasPrefix(rest, []byte(`,"index":`)) {
			return domain.Pos{Seq: seq}, true
		}
		if index, _, ok := leadingNumber(rest, `,"index":`); ok && index <= math.MaxUint32 {
			return domain.Pos{Seq: seq, Index: uint32(index)}, true
		}
	}
	var head struct {
		Seq   uint64 `json:"seq"`
		Index uint32 `json:"index"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return domain.Pos{}, false
	}
	return domain.Pos{Seq: head.Seq, Index: head.Index}, true
}

// leadingNumber reads the plain decimal after lead at the start of b,
// followed by ',' or '}', and returns it with the rest of b from that byte.
func leadingNumber(b []byte, lead string) (uint64, []byte, bool) {
	if !bytes.HasPrefix(b, []byte(lead)) {
		return 0, nil, false
	}
	i, n := len(lead), uint64(0)
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9' && i-len(lead) < 19; i++ {
		n = n*10 + uint64(b[i]-'0')
	}
	if i > len(lead) && i < len(b) && (b[i] == ',' || b[i] == '}') && (b[len(lead)] != '0' || i == len(lead)+1) {
		return n, b[i:], true
	}
	return 0, nil, false
}
