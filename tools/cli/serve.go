package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ohbloom/ohbloom/tools/server"
)

func runServe(e env, args []string) int {
	fs := flags(e, "serve", "[config-file] [flags]",
		"Serves ohbloom filters over the Redis protocol with RedisBloom's commands\n"+
			"(BF.RESERVE, BF.ADD, BF.MADD, BF.EXISTS, BF.MEXISTS, BF.INSERT, BF.INFO,\n"+
			"BF.CARD, BF.SCANDUMP, BF.LOADCHUNK, and CF.* on counting filters), so any\n"+
			"Redis client can use them, in RESP2 or RESP3 (HELLO 3), with MULTI/EXEC.\n"+
			"Every change is logged to --dir (--appendonly, --appendfsync), filters are\n"+
			"saved there on a schedule and on SIGTERM or SIGINT, and restored at start.\n"+
			"--dir must exist: serve creates none. Logs go to stderr, one format.\n\n"+
			"--load NAME=FILE serves a filter file (what build writes, or any filter\n"+
			"file of ohbloom's) as key NAME: a Filter as a BF key that does not grow\n"+
			"(it takes adds up to the capacity it was built for: build with -n above\n"+
			"today's count to leave room), a ScalableFilter as a BF key that grows, a\n"+
			"CountingFilter as a CF key. When --dir already holds NAME, the key is\n"+
			"kept: it has the adds made since. On SIGHUP every --load file that\n"+
			"changed since it was read (build renames a new file over it) replaces\n"+
			"its key at once, without a restart; adds made to the key since that\n"+
			"file's keys were read are not in it (docs/server.md).\n\n"+
			"The password may also come from the environment variable\n"+
			"OHBLOOM_REQUIREPASS, which keeps it out of ps.\n"+
			"A configuration file in Redis's syntax (the first argument, or --config)\n"+
			"sets what flags set, under Redis's names where Redis has them (port, bind,\n"+
			"maxclients, maxmemory, appendfsync, requirepass, aclfile, slowlog-*);\n"+
			"flags given override it, and CONFIG REWRITE writes it back.")
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
	maxMemory := fs.String("maxmemory", "0", "most memory the server may hold (Redis's maxmemory, noeviction: past it, writes that may add memory are refused); 0 for no limit; units b, k, kb, m, mb, g, gb")
	aclFile := fs.String("aclfile", "", "users file in Redis's ACL syntax (ACL LOAD, ACL SAVE); without it users are kept in --dir")
	configFile := fs.String("config", "", "configuration file in Redis's syntax (as redis-server's first argument)")
	verbose := fs.Bool("v", false, "log connections closed on errors")
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		// redis-server's form: the configuration file first, flags after.
		*configFile, args = args[0], args[1:]
	}
	var loads loadFlags
	fs.Var(&loads, "load", "serve the filter file FILE as key NAME: NAME=FILE, repeatable (see above)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() == 1 && *configFile == "" {
		*configFile = fs.Arg(0)
	} else if fs.NArg() != 0 {
		return usageError(e, fs, "unexpected argument %q", fs.Arg(0))
	}
	maxMem, err := server.ParseMemory(*maxMemory)
	if err != nil {
		return usageError(e, fs, "--maxmemory %q: %v", *maxMemory, err)
	}
	if *appendOnly != "yes" && *appendOnly != "no" {
		return usageError(e, fs, "--appendonly %q: yes or no", *appendOnly)
	}
	if *saveEvery == 0 {
		return usageError(e, fs, "--save-interval 0: give a positive interval, or a negative one to save only at shutdown")
	}
	flagged := server.Config{Addr: *addr, DataDir: *dir, SaveInterval: *saveEvery, Password: *pass,
		MaxFilterBytes: *maxFilter, MaxRequestBytes: *maxRequest, MaxBufferedBytes: *maxBuffered, MaxUnauthBufferedBytes: *maxUnauth, MaxClients: *maxClients, EventLoops: *loops,
		DisableAppendLog: *appendOnly == "no", AppendFsync: *appendFsync, MaxUploadBytes: *maxUpload, MaxDumpBytes: *maxDump,
		MaxMemory: uint64(maxMem), ACLFile: *aclFile}
	cfg := flagged
	if *configFile != "" {
		// The file's settings, then the flags given over them.
		cfg = server.Config{}
		if err := server.ReadConfigFile(*configFile, &cfg); err != nil {
			return fail(e, "serve", err)
		}
		if cfg.Password == "" {
			cfg.Password = *pass // OHBLOOM_REQUIREPASS
		}
		overrideFlags(fs, &cfg, flagged)
	}
	// A missing directory is refused, as Redis refuses a missing dir: made
	// here, a mistyped path would start an empty server that looks like
	// lost data.
	if cfg.DataDir != "" {
		if st, err := os.Stat(cfg.DataDir); err != nil {
			return fail(e, "serve", fmt.Errorf("--dir %s: %w (ohbloom serve creates no data directory: create it first)", cfg.DataDir, errors.Unwrap(err)))
		} else if !st.IsDir() {
			return fail(e, "serve", fmt.Errorf("--dir %s is not a directory", cfg.DataDir))
		}
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	// Every line from here on is the server's log, in one format.
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	failed := func(msg string, err error) int {
		logger.Error(msg, "err", err)
		return ExitFailure
	}
	cfg.Logger = logger
	srv, err := server.New(cfg)
	if err != nil {
		return failed("cannot start", err)
	}
	for i := range loads {
		if err := loads[i].load(srv, logger, false); err != nil {
			srv.Shutdown(context.Background())
			return failed("cannot load a filter file", err)
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		srv.Shutdown(context.Background())
		return failed("cannot listen", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("listening", "addr", ln.Addr().String())
	for done := false; !done; {
		select {
		case err := <-served:
			return failed("serving", err)
		case <-hup:
			reload(srv, logger, loads)
		case <-ctx.Done():
			done = true
		}
	}
	if cfg.DataDir != "" {
		logger.Info("shutting down, saving filters")
	} else {
		logger.Info("shutting down; no --dir, so nothing is saved")
	}
	shutdown, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return failed("shutdown", err)
	}
	if cfg.DataDir != "" {
		logger.Info("saved, bye", "dir", cfg.DataDir)
	} else {
		logger.Info("bye")
	}
	return ExitOK
}

// overrideFlags sets in c the settings of the flags given on the command
// line, from flagged.
func overrideFlags(fs *flag.FlagSet, c *server.Config, flagged server.Config) {
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "addr":
			c.Addr = flagged.Addr
		case "dir":
			c.DataDir = flagged.DataDir
		case "save-interval":
			c.SaveInterval = flagged.SaveInterval
		case "requirepass":
			c.Password = flagged.Password
		case "max-filter-bytes":
			c.MaxFilterBytes = flagged.MaxFilterBytes
		case "max-request-bytes":
			c.MaxRequestBytes = flagged.MaxRequestBytes
		case "max-buffered-bytes":
			c.MaxBufferedBytes = flagged.MaxBufferedBytes
		case "max-unauth-buffered-bytes":
			c.MaxUnauthBufferedBytes = flagged.MaxUnauthBufferedBytes
		case "max-clients":
			c.MaxClients = flagged.MaxClients
		case "event-loops":
			c.EventLoops = flagged.EventLoops
		case "appendonly":
			c.DisableAppendLog = flagged.DisableAppendLog
		case "appendfsync":
			c.AppendFsync = flagged.AppendFsync
		case "max-upload-bytes":
			c.MaxUploadBytes = flagged.MaxUploadBytes
		case "max-dump-bytes":
			c.MaxDumpBytes = flagged.MaxDumpBytes
		case "maxmemory":
			c.MaxMemory = flagged.MaxMemory
		case "aclfile":
			c.ACLFile = flagged.ACLFile
		}
	})
}

// fileLoad is one --load NAME=FILE, and the file as it was last read (or,
// when the key was kept at start, seen).
type fileLoad struct {
	name, path string
	seen       os.FileInfo
}

type loadFlags []fileLoad

func (l *loadFlags) String() string { return "" }

func (l *loadFlags) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" {
		return errors.New("want NAME=FILE, such as users=users.ohb")
	}
	for _, x := range *l {
		if x.name == name {
			return fmt.Errorf("key %q is loaded twice", name)
		}
	}
	*l = append(*l, fileLoad{name: name, path: path})
	return nil
}

// load serves the file as its key; replace says whether to replace a key
// that exists.
func (l *fileLoad) load(srv *server.Server, logger *slog.Logger, replace bool) error {
	seen, err := os.Stat(l.path)
	if err != nil {
		return err
	}
	got, err := srv.LoadFile(l.name, l.path, replace)
	if err != nil {
		return err
	}
	l.seen = seen
	switch {
	case !got.Loaded:
		logger.Info("kept the key the data directory holds; send SIGHUP once the file changes to load it over the key",
			"key", l.name, "file", l.path)
	case got.Replaced:
		logger.Info("replaced the key with the file's filter", "key", l.name, "file", l.path, "type", got.Type, "filter", got.Filter, "bytes", got.Bytes)
	default:
		logger.Info("loaded", "key", l.name, "file", l.path, "type", got.Type, "filter", got.Filter, "bytes", got.Bytes)
	}
	return nil
}

// reload, on SIGHUP, loads each --load file that changed since it was
// last read (another file renamed over it, as build writes, or written
// in place), replacing its key, and each whose key is gone. A file that
// fails to load leaves its key as it was.
func reload(srv *server.Server, logger *slog.Logger, loads loadFlags) {
	if len(loads) == 0 {
		logger.Info("SIGHUP: no --load files to reload")
		return
	}
	for i := range loads {
		l := &loads[i]
		now, err := os.Stat(l.path)
		if err != nil {
			logger.Error("SIGHUP: the key keeps its filter", "key", l.name, "file", l.path, "err", err)
			continue
		}
		changed := l.seen == nil || !os.SameFile(now, l.seen) || now.Size() != l.seen.Size() || !now.ModTime().Equal(l.seen.ModTime())
		if !changed {
			if got, err := srv.LoadFile(l.name, l.path, false); err != nil {
				logger.Error("SIGHUP: cannot load the file", "key", l.name, "file", l.path, "err", err)
			} else if got.Loaded {
				logger.Info("SIGHUP: loaded the file, whose key was gone", "key", l.name, "file", l.path)
			} else {
				logger.Info("SIGHUP: the file is unchanged; the key keeps its filter", "key", l.name, "file", l.path)
			}
			continue
		}
		if err := l.load(srv, logger, true); err != nil {
			logger.Error("SIGHUP: the key keeps its filter", "key", l.name, "file", l.path, "err", err)
		}
	}
}
