package eventjson

import (
	"slices"
	"testing"
)

// Lines splits at "\n", drops the whitespace around each line ("\r" of
// "\r\n" included) and skips blank lines; the last line may lack its "\n".
func TestLinesSplitsJSONLines(t *testing.T) {
	for in, want := range map[string][]string{
		"":                             nil,
		"\n \r\n\t\n":                  nil,
		`{"a":1}`:                      {`{"a":1}`},
		"{\"a\":1}\n":                  {`{"a":1}`},
		"{\"a\":1}\r\n{\"b\":2}\r\n":   {`{"a":1}`, `{"b":2}`},
		"\n  {\"a\":1}  \n\n{\"b\":2}": {`{"a":1}`, `{"b":2}`},
	} {
		var got []string
		Lines([]byte(in), func(l []byte) bool { got = append(got, string(l)); return true })
		if !slices.Equal(got, want) {
			t.Errorf("Lines(%q) = %q, want %q", in, got, want)
		}
		if n := CountLines([]byte(in)); n != len(want) {
			t.Errorf("CountLines(%q) = %d, want %d", in, n, len(want))
		}
	}
	var first []string
	Lines([]byte("a\nb\nc"), func(l []byte) bool { first = append(first, string(l)); return false })
	if !slices.Equal(first, []string{"a"}) {
		t.Errorf("Lines did not stop when fn returned false: %q", first)
	}
}

func TestLinesDoesNotAllocate(t *testing.T) {
	data := []byte("{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":3}")
	n := 0
	if a := testing.AllocsPerRun(100, func() {
		Lines(data, func(l []byte) bool { n += len(l); return true })
	}); a != 0 {
		t.Fatalf("Lines allocates %v times", a)
	}
}
