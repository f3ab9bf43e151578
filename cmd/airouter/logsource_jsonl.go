package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/airouter/airouter/domain"
)

// The export format is JSON Lines: one event a line, in log order. A line is
// the event's JSON exactly as domain.Encode writes it (the payload of the
// NATS message), with the event's log position added as the first member,
// "seq". A message this version could not read is a line holding only its
// seq, so a replay of the file counts it as the log does. Readers of the
// domain event ignore "seq" (it is not a field of domain.Event); a line
// without "seq" takes the previous line's seq plus one.
//
//	{"seq":41,"v":1,"kind":"outcome.recorded","at":"2026-11-29T03:11:23.5Z","outcome":{...}}
//	{"seq":44,"v":1,"kind":"ban.imposed","id":"f2b/cred-a/gpt-4o/43","at":"...","ban":{...}}

// maxLine bounds one line of an exported file (a NATS message is at most
// 8 MiB in the embedded server).
const maxLine = 8 << 20

// appendExportLine appends ev as one export line, newline included.
func appendExportLine(dst []byte, ev domain.Event) ([]byte, error) {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, ev.Seq, 10)
	if ev.Kind == "" {
		return append(dst, "}\n"...), nil
	}
	b, err := domain.Encode(ev)
	if err != nil {
		return dst, fmt.Errorf("encode the event at seq %d: %w", ev.Seq, err)
	}
	if len(b) < 2 || b[0] != '{' {
		return dst, fmt.Errorf("encode the event at seq %d: not a JSON object", ev.Seq)
	}
	if len(b) > 2 {
		dst = append(dst, ',')
	}
	dst = append(dst, b[1:]...)
	return append(dst, '\n'), nil
}

// lineReader reads an exported file event by event.
type lineReader struct {
	r        *bufio.Reader
	line     int
	prev     uint64
	bad      int
	firstBad int
	long     []byte
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 1<<20)}
}

// next returns the next event: decoded, or, when the line is JSON but not
// an event this version understands, a skip marker (empty Kind, Seq only),
// as eventlog delivers it. Lines that are not JSON are counted in bad and
// skipped. It returns io.EOF at the end.
func (l *lineReader) next() (domain.Event, error) {
	for {
		b, err := l.readLine()
		if err != nil {
			return domain.Event{}, err
		}
		l.line++
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		seq, ok := lineSeq(b)
		if !ok {
			l.bad++
			if l.firstBad == 0 {
				l.firstBad = l.line
			}
			continue
		}
		if seq == 0 {
			seq = l.prev + 1
		}
		l.prev = seq
		ev, err := domain.Decode(b)
		if err != nil || ev.Valid() != nil {
			return domain.Event{Seq: seq}, nil
		}
		ev.Seq = seq
		return ev, nil
	}
}

// readLine returns the next line without its newline; the bytes are valid
// until the next call.
func (l *lineReader) readLine() ([]byte, error) {
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

// lineSeq reads a line's "seq": quickly when it leads, as export writes
// it, else by decoding the line. It reports false when the line is not a
// JSON object; a line without "seq" gives 0.
func lineSeq(b []byte) (uint64, bool) {
	const lead = `{"seq":`
	if bytes.HasPrefix(b, []byte(lead)) {
		i, n := len(lead), uint64(0)
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9' && i-len(lead) < 19; i++ {
			n = n*10 + uint64(b[i]-'0')
		}
		if i > len(lead) && i < len(b) && (b[i] == ',' || b[i] == '}') && (b[len(lead)] != '0' || i == len(lead)+1) {
			return n, true
		}
	}
	var head struct {
		Seq uint64 `json:"seq"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return 0, false
	}
	return head.Seq, true
}
