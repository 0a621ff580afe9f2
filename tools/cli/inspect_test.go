//go:build unix

package cli

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO given as a snapshot would block open(2) until something writes to
// it: info, test and merge refuse it, by name, without opening it.
func TestSnapshotCommandsRefuseAFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.ohb")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	good := filepath.Join(dir, "good.ohb")
	if _, errOut, code := run(t, "a\nb\n", "build", "-o", good); code != 0 {
		t.Fatalf("build: %d %s", code, errOut)
	}
	for _, args := range [][]string{
		{"info", fifo},
		{"test", fifo, "a"},
		{"merge", "-o", filepath.Join(dir, "m.ohb"), fifo, good},
		{"merge", "-o", filepath.Join(dir, "m.ohb"), good, fifo},
	} {
		t.Run(args[0], func(t *testing.T) {
			// Only a hang ends at the deadline; the refusal takes
			// milliseconds.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, args...)
			var errOut bytes.Buffer
			cmd.Stderr = &errOut
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("ohbloom %s blocked on the FIFO", strings.Join(args, " "))
			}
			if err == nil || !strings.Contains(errOut.String(), fifo+" is a named pipe") {
				t.Fatalf("ohbloom %s: %v, stderr %q; want a refusal naming the FIFO", strings.Join(args, " "), err, errOut.String())
			}
		})
	}
}
