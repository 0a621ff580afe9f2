//go:build !race

package ohbloom

const raceEnabled = false
