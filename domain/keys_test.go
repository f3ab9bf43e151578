package domain

import (
	"slices"
	"testing"
)

// Keys sort by credential, then model; the wildcard model sorts before
// every named one.
func TestKeyCompareOrdersByCredentialThenModel(t *testing.T) {
	keys := []Key{
		{Credential: "b", Model: "a"},
		{Credential: "a", Model: "z"},
		{Credential: "a", Model: AllModels},
		{Credential: "a", Model: "m"},
		{Credential: "ab", Model: "a"},
	}
	slices.SortFunc(keys, Key.Compare)
	want := []Key{
		{Credential: "a", Model: AllModels},
		{Credential: "a", Model: "m"},
		{Credential: "a", Model: "z"},
		{Credential: "ab", Model: "a"},
		{Credential: "b", Model: "a"},
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("sorted\n got %v\nwant %v", keys, want)
	}
	k := Key{Credential: "a", Model: "m"}
	if k.Compare(k) != 0 || k.Compare(Key{Credential: "a", Model: "n"}) != -1 || k.Compare(Key{Credential: "0", Model: "z"}) != 1 {
		t.Error("Compare is not -1/0/+1 by credential, then model")
	}
}
