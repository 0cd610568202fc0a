//go:build race

package hostauth

// raceEnabled: the race detector is on, and its shadow memory is in RSS.
const raceEnabled = true
