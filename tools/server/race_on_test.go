//go:build race

package server

// raceEnabled: the race detector allocates on paths that otherwise do not.
const raceEnabled = true
