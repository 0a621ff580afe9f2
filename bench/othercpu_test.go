package bench

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The machines these benchmarks run on are shared: a build or a test of
// someone else's, or the hypervisor's other guests (steal), can take a
// core during a round. Each timed round reports how much: other-cpu and
// steal-cpu, in CPUs (0 to the core count), so that a noisy round shows
// as such in the raw output.

// otherCPU starts measuring; the function it returns reports the CPU time
// other processes and the hypervisor took since, as metrics of b.
func otherCPU(b *testing.B) func() {
	t0, start := cpuTicks(), time.Now()
	return func() {
		t1 := cpuTicks()
		s := 100 * time.Since(start).Seconds() // ticks are 1/100 s
		b.ReportMetric(max(0, float64((t1.busy-t0.busy)-(t1.self-t0.self))/s), "other-cpu")
		b.ReportMetric(float64(t1.steal-t0.steal)/s, "steal-cpu")
	}
}

type ticks struct{ busy, steal, self int64 }

// cpuTicks reads the ticks all CPUs spent busy and stolen (/proc/stat) and
// those this process spent (/proc/self/stat); zeros where they cannot be
// read.
func cpuTicks() (t ticks) {
	stat, err1 := os.ReadFile("/proc/stat")
	me, err2 := os.ReadFile("/proc/self/stat")
	if err1 != nil || err2 != nil {
		return t
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal
	_, rest, _ := strings.Cut(string(me), ") ")
	g := strings.Fields(rest) // state ppid ... utime (12th) stime (13th)
	if len(f) < 9 || len(g) < 13 {
		return t
	}
	num := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	for _, i := range []int{1, 2, 3, 6, 7} {
		t.busy += num(f[i])
	}
	t.steal, t.self = num(f[8]), num(g[11])+num(g[12])
	return t
}
