package ohbloom

import "github.com/zeebo/xxh3"

// Hash returns the filter's hash of key: XXH3_64bits seeded with the
// filter's seed, as Filter.Hash. A caller that hashes a key once can log or
// route the hash and apply it later with AddHash and RemoveHash.
func (l *countingLayout) Hash(key []byte) uint64 { return xxh3.HashSeed(key, l.seed) }

// Seed returns the hash seed.
func (l *countingLayout) Seed() uint64 { return l.seed }

// CountHash is Count for the key whose Hash is h.
func (l *countingLayout) CountHash(h uint64) uint8 { return l.countHash(h) }

// AddHash counts in the key whose Hash is h.
func (f *CountingFilter) AddHash(h uint64) { f.addHash(h) }

// RemoveHash counts out the key whose Hash is h, as Remove does.
func (f *CountingFilter) RemoveHash(h uint64) error { return f.removeHash(h) }

// AddHash counts in the key whose Hash is h.
func (f *AtomicCountingFilter) AddHash(h uint64) { f.addHash(h) }

// RemoveHash counts out the key whose Hash is h, as Remove does.
func (f *AtomicCountingFilter) RemoveHash(h uint64) error { return f.removeHash(h) }
