//go:build race

package projections

// raceEnabled: the race detector is on, and sync.Pool drops items at
// random, so allocation counts are not the program's own.
const raceEnabled = true
