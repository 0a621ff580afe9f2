//go:build !linux

package server

func uname() string { return "" }

func totalSystemMemory() int64 { return 0 }

// processRSS is, without /proc, the memory the Go runtime holds from the
// system.
func processRSS(m *memSample) int64 { return m.total - m.released }
