//go:build !linux

package main

import "errors"

// evict would drop the data directory's files from the page cache: with
// posix_fadvise, which this tool calls only on Linux.
func evict(dir string) error {
	return errors.New("evicting the page cache needs Linux")
}
