//go:build !race

package proxy

// raceEnabled: the race detector is off (see race_on_test.go).
const raceEnabled = false
