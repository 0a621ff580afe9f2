package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// meter reports the progress of one long phase of a command: on a
// terminal as a bar redrawn in place, elsewhere (a log, a pipe, CI) as
// plain lines, one when the phase starts, one at least every
// plainEvery while it runs and one when it ends.
type meter struct {
	w        io.Writer
	terminal bool
	name     string        // the phase, first on every line
	unit     string        // what done counts: "rows loaded"
	total    uint64        // 0 when unknown
	done     func() uint64 // how far along, read from the meter's goroutine
	extra    func() string // more figures for the line, or nil
	start    time.Time
	stop     chan struct{}
	wg       sync.WaitGroup
	lastLen  int              // the terminal line's length, to blank it out
	tick     <-chan time.Time // nil: a ticker of the meter's own
}

// plainEvery and termEvery are how often a meter writes: plain lines at
// twice the rate promised (at least every two seconds) so that a loaded
// machine's scheduling delays still keep the promise, and the terminal
// bar often enough to look alive.
const (
	plainEvery = time.Second
	termEvery  = 200 * time.Millisecond
)

// startMeter starts reporting, and writes the phase's first line.
func (m *meter) startMeter() *meter {
	m.start = time.Now()
	m.stop = make(chan struct{})
	m.draw(false)
	tick := m.tick
	var ticker *time.Ticker
	if tick == nil {
		every := plainEvery
		if m.terminal {
			every = termEvery
		}
		ticker = time.NewTicker(every)
		tick = ticker.C
	}
	m.wg.Go(func() {
		if ticker != nil {
			defer ticker.Stop()
		}
		for {
			select {
			case <-m.stop:
				return
			case <-tick:
				m.draw(false)
			}
		}
	})
	return m
}

// finish stops the reports and writes the phase's last line.
func (m *meter) finish() {
	close(m.stop)
	m.wg.Wait()
	m.draw(true)
}

// draw writes the current state: a line, or the bar redrawn.
func (m *meter) draw(last bool) {
	line := m.line(time.Since(m.start), last)
	if !m.terminal {
		fmt.Fprintln(m.w, line)
		return
	}
	pad := max(0, m.lastLen-len(line))
	m.lastLen = len(line)
	end := ""
	if last {
		end = "\n"
	}
	fmt.Fprintf(m.w, "\r%s%s%s", line, strings.Repeat(" ", pad), end)
}

// line says how far the phase is: count, share, rate, time left, and the
// extra figures.
func (m *meter) line(elapsed time.Duration, last bool) string {
	done := m.done()
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s ", m.name)
	if m.terminal && m.total > 0 {
		const width = 24
		filled := int(min(done, m.total) * width / m.total)
		b.WriteString("[" + strings.Repeat("=", filled) + strings.Repeat(" ", width-filled) + "] ")
	}
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	if m.total > 0 {
		fmt.Fprintf(&b, "%s of %s %s (%.0f%%)", thousands(done), thousands(m.total), m.unit,
			100*float64(min(done, m.total))/float64(m.total))
	} else {
		fmt.Fprintf(&b, "%s %s", thousands(done), m.unit)
	}
	if done > 0 { // no rate of nothing
		fmt.Fprintf(&b, ", %s/s", thousands(uint64(rate)))
	}
	switch {
	case last:
		fmt.Fprintf(&b, ", done in %v", elapsed.Round(time.Millisecond))
	case m.total > done && rate > 0:
		eta := time.Duration(float64(m.total-done) / rate * float64(time.Second))
		fmt.Fprintf(&b, ", ETA %v", eta.Round(time.Second))
	}
	if m.extra != nil {
		b.WriteString("; " + m.extra())
	}
	return b.String()
}

// thousands writes n with commas: 1,234,567.
func thousands(n uint64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
