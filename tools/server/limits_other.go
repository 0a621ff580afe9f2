//go:build !unix

package server

func maxClientsForFiles() (int, bool) { return 0, false }
