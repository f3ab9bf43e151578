//go:build !race

package projections

// raceEnabled: the race detector is off (see race_on_test.go).
const raceEnabled = false
