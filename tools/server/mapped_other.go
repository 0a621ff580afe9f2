//go:build !linux

package server

import "os"

// mapFile maps nothing here: the start reads the files.
func mapFile(*os.File, int64) *mapping { return nil }

func (m *mapping) drop()   {}
func (m *mapping) retire() {}
