//go:build !unix

package loader

import "os"

// maxRSS is 0 here: there is no getrusage (the child reports its own peak
// where it can).
func maxRSS(*os.ProcessState) int64 { return 0 }
