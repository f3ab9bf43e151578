package streamspec

import (
	"slices"
	"testing"
)

func TestStorageKinds(t *testing.T) {
	kinds := StorageKinds()
	if len(kinds) == 0 || kinds[0] != DefaultStorage {
		t.Fatalf("StorageKinds() = %v, want the default %q first", kinds, DefaultStorage)
	}
	for _, k := range kinds {
		if !ValidStorage(k) {
			t.Errorf("ValidStorage(%q) = false for a listed kind", k)
		}
	}
	for _, k := range []string{"", "File", "tape"} {
		if ValidStorage(k) || slices.Contains(kinds, k) {
			t.Errorf("%q is accepted as a storage kind", k)
		}
	}
}

func TestValidReplicas(t *testing.T) {
	for n, want := range map[int]bool{0: false, 1: true, 3: true, 5: true, 6: false, -1: false} {
		if got := ValidReplicas(n); got != want {
			t.Errorf("ValidReplicas(%d) = %v, want %v", n, got, want)
		}
	}
}
