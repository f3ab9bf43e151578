package domain

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckModelName(t *testing.T) {
	for _, tt := range []struct {
		name string
		want error
	}{
		{"gpt-4.1", nil},
		{strings.Repeat("m", MaxModelNameLen), nil},
		{strings.Repeat("m", MaxModelNameLen+1), ErrModelNameTooLong},
		{strings.Repeat("я", MaxModelNameLen/2), nil}, // 2 bytes each: exactly the limit
		{strings.Repeat("я", MaxModelNameLen/2+1), ErrModelNameTooLong},
	} {
		if got := CheckModelName(tt.name); !errors.Is(got, tt.want) {
			t.Errorf("CheckModelName(%d bytes) = %v, want %v", len(tt.name), got, tt.want)
		}
	}
}
