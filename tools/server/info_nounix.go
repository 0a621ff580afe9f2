//go:build !unix

package server

func cpuTimes() (sys, user, childSys, childUser string) {
	return "0.000000", "0.000000", "0.000000", "0.000000"
}
