package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ohbloom/ohbloom/tools/server"
)

func runServe(e env, args []string) int {
	fs := flags(e, "serve", "[flags]",
		"Serves ohbloom filters over the Redis protocol with RedisBloom's commands\n"+
			"(BF.RESERVE, BF.ADD, BF.MADD, BF.EXISTS, BF.MEXISTS, BF.INSERT, BF.INFO,\n"+
			"BF.CARD, BF.SCANDUMP, BF.LOADCHUNK, and CF.* on counting filters), so any\n"+
			"Redis client can use them, in RESP2 or RESP3 (HELLO 3), with MULTI/EXEC.\n"+
			"Every change is logged to --dir (--appendonly, --appendfsync), filters are\n"+
			"saved there on a schedule and on SIGTERM or SIGINT, and restored at start.\n"+
			"The password may also come from the environment variable\n"+
			"OHBLOOM_REQUIREPASS, which keeps it out of ps.")
	addr := fs.String("addr", server.DefaultAddr, "address to listen on (loopback by default)")
	dir := fs.String("dir", "", "data directory, one file per filter; empty keeps filters in memory only")
	saveEvery := fs.Duration("save-interval", server.DefaultSaveInterval, "how often changed filters are saved; negative for only at shutdown")
	pass := fs.String("requirepass", os.Getenv("OHBLOOM_REQUIREPASS"), "password clients must AUTH with")
	maxFilter := fs.Uint64("max-filter-bytes", server.DefaultMaxFilterBytes, "largest filter a client may create or grow")
	maxRequest := fs.Int("max-request-bytes", server.DefaultMaxRequestBytes, "largest request (one command with its arguments) or MULTI queue of one client")
	maxBuffered := fs.Int64("max-buffered-bytes", server.DefaultMaxBufferedBytes, "most bytes all clients' unfinished requests, unread replies and MULTI queues may hold together")
	maxUnauth := fs.Int64("max-unauth-buffered-bytes", 0, "most of --max-buffered-bytes that clients not yet authenticated (with --requirepass) may hold together (0: 32 MiB, or --max-buffered-bytes if less)")
	maxClients := fs.Int("max-clients", server.DefaultMaxClients, "most connections served at once (lowered to fit the open-file limit)")
	loops := fs.Int("event-loops", 0, "event loops serving the connections (0: one per two cores)")
	appendOnly := fs.String("appendonly", "yes", "yes: log every change to --dir, replayed at start; no: a crash loses the changes since the last save")
	appendFsync := fs.String("appendfsync", "everysec", "when the log is fsynced: always (before each reply), everysec (a crash loses at most about a second), no (when the kernel writes back)")
	maxUpload := fs.Uint64("max-upload-bytes", 0, "bytes LOADCHUNK uploads in progress may hold in all (0: twice the largest dump of a --max-filter-bytes filter)")
	maxDump := fs.Uint64("max-dump-bytes", 0, "bytes SCANDUMPs in progress may hold in all (0: twice the largest dump of a --max-filter-bytes filter)")
	verbose := fs.Bool("v", false, "log connections closed on errors")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(e, fs, "unexpected argument %q", fs.Arg(0))
	}
	if *appendOnly != "yes" && *appendOnly != "no" {
		return usageError(e, fs, "--appendonly %q: yes or no", *appendOnly)
	}
	if *saveEvery == 0 {
		return usageError(e, fs, "--save-interval 0: give a positive interval, or a negative one to save only at shutdown")
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	srv, err := server.New(server.Config{Addr: *addr, DataDir: *dir, SaveInterval: *saveEvery, Password: *pass,
		MaxFilterBytes: *maxFilter, MaxRequestBytes: *maxRequest, MaxBufferedBytes: *maxBuffered, MaxUnauthBufferedBytes: *maxUnauth, MaxClients: *maxClients, EventLoops: *loops, Logger: logger,
		DisableAppendLog: *appendOnly == "no", AppendFsync: *appendFsync, MaxUploadBytes: *maxUpload, MaxDumpBytes: *maxDump})
	if err != nil {
		return fail(e, "serve", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fail(e, "serve", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(e.stderr, "ohbloom serve: listening on %s\n", ln.Addr())
	select {
	case err := <-served:
		return fail(e, "serve", err)
	case <-ctx.Done():
	}
	fmt.Fprintln(e.stderr, "ohbloom serve: shutting down, saving filters")
	shutdown, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fail(e, "serve", err)
	}
	fmt.Fprintln(e.stderr, "ohbloom serve: saved, bye")
	return ExitOK
}
