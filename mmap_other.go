//go:build !unix

package ohbloom

import "os"

// mapBlocks cannot map files here: Open falls back to reading them.
func mapBlocks(*os.File, uint64) ([]byte, []block, error) { return nil, nil, nil }

func unmap([]byte) error { return nil }

// syncDir does nothing where directories cannot be synced (Windows makes a
// rename durable by itself).
func syncDir(string) error { return nil }
