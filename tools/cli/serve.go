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
	"strconv"
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
			"TLS is served on --tls-port with Redis's tls-* settings (clients must\n"+
			"present a certificate the --tls-ca-cert-file vouches for unless\n"+
			"--tls-auth-clients no or optional); SIGHUP reads the certificate, key\n"+
			"and CA files again, and CONFIG SET tls-cert-file ... changes them.\n"+
			"--unixsocket serves plaintext on a Unix socket too. --addr \"\" serves\n"+
			"no plaintext TCP port: TLS or the socket only.\n\n"+
			"The password may also come from the environment variable\n"+
			"OHBLOOM_REQUIREPASS, which keeps it out of ps, and the key's passphrase\n"+
			"from OHBLOOM_TLS_KEY_FILE_PASS.\n"+
			"A configuration file in Redis's syntax (the first argument, or --config)\n"+
			"sets what flags set, under Redis's names where Redis has them (port, bind,\n"+
			"maxclients, maxmemory, appendfsync, requirepass, aclfile, slowlog-*,\n"+
			"tls-*, unixsocket); flags given override it, and CONFIG REWRITE writes\n"+
			"it back.")
	addr := fs.String("addr", server.DefaultAddr, "address to serve plaintext on (loopback by default); empty for none")
	tlsPort := fs.String("tls-port", "", "port (on --addr's host) or address to serve TLS on; empty or 0 for none")
	var tlsCfg server.TLSConfig
	fs.StringVar(&tlsCfg.CertFile, "tls-cert-file", "", "the server's certificate (with its chain), PEM")
	fs.StringVar(&tlsCfg.KeyFile, "tls-key-file", "", "the server's private key, PEM")
	fs.StringVar(&tlsCfg.KeyFilePass, "tls-key-file-pass", os.Getenv("OHBLOOM_TLS_KEY_FILE_PASS"), "passphrase of an encrypted --tls-key-file")
	fs.StringVar(&tlsCfg.CACertFile, "tls-ca-cert-file", "", "certificates of the authorities that vouch for clients' certificates, PEM")
	fs.StringVar(&tlsCfg.CACertDir, "tls-ca-cert-dir", "", "directory of such certificates, PEM files")
	fs.StringVar(&tlsCfg.AuthClients, "tls-auth-clients", "yes", "yes: clients must present a certificate; optional: one presented must be valid; no")
	fs.StringVar(&tlsCfg.Protocols, "tls-protocols", "", "TLS versions served, apart by spaces: TLSv1.2, TLSv1.3 (default both)")
	fs.StringVar(&tlsCfg.Ciphers, "tls-ciphers", "", "TLS 1.2 cipher suites allowed, apart by colons, OpenSSL or IANA names (default Go's secure ones)")
	unixSocket := fs.String("unixsocket", "", "path of a Unix socket to serve plaintext on too")
	unixPerm := fs.String("unixsocketperm", "", "permissions of the Unix socket, octal as chmod's (700); default what the umask leaves")
	dir := fs.String("dir", "", "data directory, one file per filter; empty keeps filters in memory only")
	saveEvery := fs.Duration("save-interval", server.DefaultSaveInterval, "how often changed filters are saved; negative for only at shutdown")
	pass := fs.String("requirepass", os.Getenv("OHBLOOM_REQUIREPASS"), "password clients must AUTH with")
	maxFilter := fs.Uint64("max-filter-bytes", server.DefaultMaxFilterBytes, "largest filter a client may create or grow")
	maxRequest := fs.Int("max-request-bytes", server.DefaultMaxRequestBytes, "largest request (one command with its arguments) or MULTI queue of one client")
	maxBuffered := fs.Int64("max-buffered-bytes", server.DefaultMaxBufferedBytes, "most bytes all clients' unfinished requests, unread replies and MULTI queues may hold together")
	maxUnauth := fs.Int64("max-unauth-buffered-bytes", 0, "most of --max-buffered-bytes that clients not yet authenticated (with --requirepass) may hold together (0: 32 MiB, or --max-buffered-bytes if less)")
	maxClients := fs.Int("max-clients", server.DefaultMaxClients, "most connections served at once (lowered to fit the open-file limit)")
	loops := fs.Int("event-loops", 0, "event loops serving the connections (0: one per two cores)")
	databases := fs.Int("databases", server.DefaultDatabases, "number of databases SELECT chooses between, as Redis's databases")
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
	var perm os.FileMode
	if *unixPerm != "" {
		p, err := strconv.ParseUint(*unixPerm, 8, 32)
		if err != nil || p > 0o777 {
			return usageError(e, fs, "--unixsocketperm %q: octal permissions, at most 777", *unixPerm)
		}
		perm = os.FileMode(p)
	}
	flagged := server.Config{Addr: *addr, TLS: tlsCfg, UnixSocket: *unixSocket, UnixSocketPerm: perm, DataDir: *dir, SaveInterval: *saveEvery, Password: *pass,
		MaxFilterBytes: *maxFilter, MaxRequestBytes: *maxRequest, MaxBufferedBytes: *maxBuffered, MaxUnauthBufferedBytes: *maxUnauth, MaxClients: *maxClients, EventLoops: *loops, Databases: *databases,
		DisableAppendLog: *appendOnly == "no", AppendFsync: *appendFsync, MaxUploadBytes: *maxUpload, MaxDumpBytes: *maxDump,
		MaxMemory: uint64(maxMem), ACLFile: *aclFile}
	cfg := flagged
	if *configFile != "" {
		// The file's settings, then the flags given over them.
		cfg = server.Config{}
		if err := server.ReadConfigFile(*configFile, &cfg); err != nil {
			return fail(e, "serve", err)
		}
		if cfg.Addr == "" {
			cfg.Addr = server.DefaultAddr // "" is --addr "": no plaintext port
		}
		if cfg.Password == "" {
			cfg.Password = *pass // OHBLOOM_REQUIREPASS
		}
		if cfg.TLS.KeyFilePass == "" {
			cfg.TLS.KeyFilePass = tlsCfg.KeyFilePass // OHBLOOM_TLS_KEY_FILE_PASS
		}
		overrideFlags(fs, &cfg, flagged)
	}
	if flagGiven(fs, "tls-port") {
		// On the host of --addr, or of the file's bind, either given.
		if cfg.TLSAddr, err = tlsAddress(cfg.Addr, *tlsPort); err != nil {
			return usageError(e, fs, "%v", err)
		}
	}
	switch {
	case cfg.TLSAddr != "" && cfg.TLS.CertFile == "":
		return usageError(e, fs, "--tls-port needs --tls-cert-file and --tls-key-file")
	case cfg.TLSAddr == "" && (cfg.TLS.CertFile != "" || cfg.TLS.KeyFile != ""):
		return usageError(e, fs, "--tls-cert-file and --tls-key-file serve nothing without --tls-port")
	case cfg.Addr == "" && cfg.TLSAddr == "" && cfg.UnixSocket == "":
		return usageError(e, fs, "--addr \"\" without --tls-port or --unixsocket: nothing to serve on")
	case *unixPerm != "" && cfg.UnixSocket == "":
		return usageError(e, fs, "--unixsocketperm without --unixsocket")
	case *databases < 1:
		return usageError(e, fs, "--databases %d: at least 1", *databases)
	}
	if cfg.TLSAddr == "" {
		cfg.TLS = server.TLSConfig{}
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
	server.RaiseProcs() // so that an event loop always finds a processor
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
	lns, err := listen(srv, cfg.Addr, cfg.TLSAddr, cfg.UnixSocket, cfg.UnixSocketPerm)
	if err != nil {
		srv.Shutdown(context.Background())
		return failed("cannot listen", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	served := make(chan error, len(lns))
	for _, l := range lns {
		go func() { served <- l.serve(l.ln) }()
	}
	for _, l := range lns {
		logger.Info(l.msg, l.what, l.ln.Addr().String())
	}
	for done := false; !done; {
		select {
		case err := <-served:
			srv.Shutdown(context.Background())
			return failed("serving", err)
		case <-hup:
			reload(srv, logger, loads)
			if cfg.TLSAddr != "" {
				if err := srv.ReloadTLS(); err != nil {
					logger.Error("SIGHUP: the TLS certificates in use stay", "err", err)
				} else {
					logger.Info("SIGHUP: reloaded the TLS certificate, key and CA files")
				}
			}
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
		case "databases":
			c.Databases = flagged.Databases
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
		case "tls-cert-file":
			c.TLS.CertFile = flagged.TLS.CertFile
		case "tls-key-file":
			c.TLS.KeyFile = flagged.TLS.KeyFile
		case "tls-key-file-pass":
			c.TLS.KeyFilePass = flagged.TLS.KeyFilePass
		case "tls-ca-cert-file":
			c.TLS.CACertFile = flagged.TLS.CACertFile
		case "tls-ca-cert-dir":
			c.TLS.CACertDir = flagged.TLS.CACertDir
		case "tls-auth-clients":
			c.TLS.AuthClients = flagged.TLS.AuthClients
		case "tls-protocols":
			c.TLS.Protocols = flagged.TLS.Protocols
		case "tls-ciphers":
			c.TLS.Ciphers = flagged.TLS.Ciphers
		case "unixsocket":
			c.UnixSocket = flagged.UnixSocket
		case "unixsocketperm":
			c.UnixSocketPerm = flagged.UnixSocketPerm
		}
		// tls-port: runServe, on the address the flags and the file give.
	})
}

// flagGiven reports whether the flag name was given on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// tlsAddress is the address --tls-port names: a port alone on --addr's
// host (loopback if --addr is empty), or an address; "" or "0" for none,
// as Redis's tls-port 0.
func tlsAddress(addr, port string) (string, error) {
	if port == "" || port == "0" {
		return "", nil
	}
	if n, err := strconv.Atoi(port); err == nil {
		if n < 0 || n > 65535 {
			return "", fmt.Errorf("--tls-port %d: not a port", n)
		}
		if addr == "" {
			addr = server.DefaultAddr
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return "", fmt.Errorf("--addr %q: %w", addr, err)
		}
		return net.JoinHostPort(host, port), nil
	}
	if _, _, err := net.SplitHostPort(port); err != nil {
		return "", fmt.Errorf("--tls-port %q: a port or an address (host:port)", port)
	}
	return port, nil
}

// listener is one of the server's listeners, how it is served and how
// its log line names it.
type listener struct {
	ln        net.Listener
	serve     func(net.Listener) error
	msg, what string
}

// listen opens the listeners asked for, the plaintext port first; if one
// cannot be opened, none stays open.
func listen(srv *server.Server, addr, tlsAddr, unixSocket string, perm os.FileMode) ([]listener, error) {
	var lns []listener
	open := func(ln net.Listener, err error, serve func(net.Listener) error, msg, what string) error {
		if err != nil {
			for _, l := range lns {
				l.ln.Close()
			}
			return err
		}
		lns = append(lns, listener{ln, serve, msg, what})
		return nil
	}
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err := open(ln, err, srv.Serve, "listening", "addr"); err != nil {
			return nil, err
		}
	}
	if tlsAddr != "" {
		ln, err := net.Listen("tcp", tlsAddr)
		if err := open(ln, err, srv.ServeTLS, "listening with TLS", "addr"); err != nil {
			return nil, err
		}
	}
	if unixSocket != "" {
		ln, err := server.ListenUnix(unixSocket, perm)
		if err := open(ln, err, srv.Serve, "listening on a Unix socket", "path"); err != nil {
			return nil, err
		}
	}
	return lns, nil
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
