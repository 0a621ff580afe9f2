package redisbloom

// This file holds the package's only use of unsafe: AddString and
// TestString hash a string's bytes in place, without the copy that
// converting it to a []byte would make.

import "unsafe"

// stringBytes views the bytes of s, for a callee that only reads them.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
