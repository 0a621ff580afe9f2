package cli

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPty returns a pseudo-terminal's controller and its terminal.
func openPty(t *testing.T) (controller, terminal *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skip("no pseudo-terminals here:", err)
	}
	controller = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	terminal, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return controller, terminal
}

// On a terminal build draws its progress unless -progress=false says not to.
func TestProgressOnATerminal(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.txt")
	os.WriteFile(keys, []byte(keyLines("k", 10_000)), 0o644)
	for _, c := range []struct {
		flag  string
		drawn bool
	}{{"", true}, {"-progress=false", false}, {"--progress", true}} {
		controller, terminal := openPty(t)
		args := []string{"build", "-o", filepath.Join(dir, "out.ohb"), "--keys", keys}
		if c.flag != "" {
			args = append(args, c.flag)
		}
		cmd := exec.Command(binary, args...)
		var stdout bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, terminal
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		terminal.Close() // the child holds it; the controller reads EOF (EIO) when it exits
		var drawn bytes.Buffer
		io.Copy(&drawn, controller) // ends with EIO once the child has exited
		controller.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("build %s: %v: %s", c.flag, err, drawn.String())
		}
		got := strings.Contains(drawn.String(), "10,000 of 10,000 keys")
		if got != c.drawn || !strings.Contains(stdout.String(), "wrote ") {
			t.Errorf("build %q on a terminal: progress drawn %v, want %v: %q", c.flag, got, c.drawn, drawn.String())
		}
	}
}
