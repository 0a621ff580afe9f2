package sysmem

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestRAMPlusSwap holds RAMPlusSwap to /proc/meminfo: MemTotal plus
// SwapTotal, which the kernel reports from the same counters as sysinfo.
func TestRAMPlusSwap(t *testing.T) {
	if runtime.GOOS != "linux" {
		if got := RAMPlusSwap(); got != ^uint64(0) {
			t.Fatalf("RAMPlusSwap() = %d where it is unknown", got)
		}
		return
	}
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Skip(err)
	}
	var want uint64
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && (f[0] == "MemTotal:" || f[0] == "SwapTotal:") && f[2] == "kB" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			want += kb << 10
		}
	}
	if got := RAMPlusSwap(); got != want {
		t.Fatalf("RAMPlusSwap() = %d, /proc/meminfo says %d", got, want)
	}
}
