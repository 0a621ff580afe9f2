// Package server serves ohbloom filters over the Redis protocol, with
// RedisBloom's commands, so that any Redis client (redis-cli, go-redis,
// redis-py, Jedis) can share a filter unchanged.
//
// BF.* keys are scalable one-hash blocked filters (NONSCALING: a fixed
// filter), CF.* keys RedisBloom's cuckoo filter, bit for bit; BF keys
// loaded from a RedisBloom dump hold RedisBloom's own filter. docs/server.md says
// what differs from RedisBloom and why. Filters are saved crash-safely
// to a data directory, with an append-only log of the changes between
// saves, and restored on start (persist.go states the promise).
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Server. The zero value of each field means its
// default.
type Config struct {
	// Addr is the address ListenAndServe serves plaintext on; default
	// 127.0.0.1:6379, loopback only, as Redis's own protected mode.
	Addr string
	// TLSAddr, when set, is an address ListenAndServe serves TLS on
	// (Redis's tls-port), with the certificates of TLS.
	TLSAddr string
	// TLS is the TLS configuration, Redis's tls-* settings (tls.go): TLS
	// is served, by ServeTLS, when TLS.CertFile is set.
	TLS TLSConfig
	// UnixSocket, when set, is the path of a Unix socket ListenAndServe
	// serves plaintext on (Redis's unixsocket); UnixSocketPerm, when not
	// 0, its permissions (unixsocketperm). See ListenUnix.
	UnixSocket     string
	UnixSocketPerm os.FileMode
	// DataDir holds one file per key. Empty keeps the filters in memory
	// only, lost at exit.
	DataDir string
	// SaveInterval is how often changed filters are saved; default one
	// minute, negative for never (they are still saved on shutdown).
	SaveInterval time.Duration
	// Password, when set, must be given with AUTH (or HELLO's AUTH)
	// before any other command, as Redis's requirepass: it is the default
	// user's password (acl.go). Until a client authenticates it may send
	// at most 10 arguments of 16 KiB each, as in Redis.
	Password string
	// ACLFile holds the users, in Redis's ACL file syntax (--aclfile),
	// read at start and by ACL LOAD, written by ACL SAVE. Without it the
	// users are kept in DataDir (or in memory without one).
	ACLFile string
	// MaxMemory bounds the memory the server holds, as Redis's maxmemory
	// with the noeviction policy: past it, commands that may add memory
	// are refused. 0 for no bound.
	MaxMemory uint64
	// ConfigFile is the Redis-syntax configuration file the settings were
	// read from (ReadConfigFile), for CONFIG REWRITE; "" without one.
	ConfigFile string
	// Settings are settings that change at run time (CONFIG SET's), as
	// name and value, applied at start in order: slowlog-max-len,
	// latency-monitor-threshold, maxmemory-policy...
	Settings [][2]string
	// ignoredSettings are Redis settings a configuration file held that
	// this server does not have, logged at start.
	ignoredSettings []string
	// MaxFilterBytes bounds the memory of one filter: reservations that
	// would exceed it are refused, and a scalable filter stops growing
	// past it. Default 1 GiB.
	MaxFilterBytes uint64
	// MaxRequestBytes bounds one request (one command with its
	// arguments), a MULTI queue, and the replies a client leaves unread;
	// a client going past it is told (if it reads) and disconnected.
	// Default 64 MiB, at most 1 GiB.
	MaxRequestBytes int
	// MaxBufferedBytes bounds the bytes all clients' unfinished requests
	// and MULTI queues hold at once; a client whose request would go past
	// it is told and disconnected. Default 512 MiB.
	MaxBufferedBytes int64
	// MaxUnauthBufferedBytes bounds the part of MaxBufferedBytes that
	// clients which have not authenticated hold together, when Password
	// is set: a crowd of connections that know no password cannot take
	// the budget from the clients that do. Each may hold 256 KiB of
	// commands and as much of unread replies. Default 32 MiB, at most
	// MaxBufferedBytes.
	MaxUnauthBufferedBytes int64
	// MaxClients bounds the connections served at once; default 10000.
	// It is lowered, with a warning, to what the open-file limit
	// (RLIMIT_NOFILE) leaves once the data files and listener are counted.
	MaxClients int
	// DisableAppendLog turns the append-only log off (--appendonly no):
	// then a crash loses every change since the last save.
	DisableAppendLog bool
	// AppendFsync is when the log is fsynced, Redis's appendfsync:
	// "always" (before the reply), "everysec" (the default) or "no".
	AppendFsync string
	// MaxUploadBytes bounds the bytes held by LOADCHUNK uploads in
	// progress; default twice the largest dump of a MaxFilterBytes filter.
	MaxUploadBytes uint64
	// MaxDumpBytes bounds the bytes held by SCANDUMPs in progress; default
	// as MaxUploadBytes.
	MaxDumpBytes uint64
	// Databases is how many databases SELECT chooses between, numbered
	// from 0; default 16, as Redis. A data directory holding keys of a
	// database past them is refused at start.
	Databases int
	// EventLoops is how many event loops serve the connections (commands
	// run on them); default one per two cores the process may use (see
	// loop_linux.go for the measurements), at least one.
	EventLoops int
	// Logger receives errors of saves and connections; default
	// slog.Default().
	Logger *slog.Logger
}

// Defaults for Config's zero fields.
const (
	DefaultAddr             = "127.0.0.1:6379"
	DefaultSaveInterval     = time.Minute
	DefaultMaxFilterBytes   = 1 << 30
	DefaultMaxRequestBytes  = 64 << 20
	DefaultMaxBufferedBytes = 512 << 20
	// DefaultMaxUnauthBufferedBytes holds the buffers of 128 clients at
	// their unauthenticated limit; one that merely sends AUTH takes none.
	DefaultMaxUnauthBufferedBytes = 32 << 20
	DefaultMaxClients             = 10000
)

// minUnauthBufferedBytes is the least MaxUnauthBufferedBytes accepted:
// what one unauthenticated client may hold, its waiting commands and an
// inline line beyond them, and its unread replies.
const minUnauthBufferedBytes = 2*unauthPendingBytes + maxInlineBytes

// maxRequestBytesLimit is the largest MaxRequestBytes accepted.
const maxRequestBytesLimit = 1 << 30

func (c Config) withDefaults() (Config, error) {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.SaveInterval == 0 {
		c.SaveInterval = DefaultSaveInterval
	}
	if c.MaxFilterBytes == 0 {
		c.MaxFilterBytes = DefaultMaxFilterBytes
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxBufferedBytes == 0 {
		c.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if c.MaxUnauthBufferedBytes == 0 {
		c.MaxUnauthBufferedBytes = min(DefaultMaxUnauthBufferedBytes, c.MaxBufferedBytes)
	}
	if c.MaxClients == 0 {
		c.MaxClients = DefaultMaxClients
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.EventLoops == 0 {
		c.EventLoops = max(1, processors()/2)
	}
	if c.Databases == 0 {
		c.Databases = DefaultDatabases
	}
	switch {
	case c.Databases < 1 || c.Databases > maxDatabases:
		return c, fmt.Errorf("server: Databases %d is outside [1, %d]", c.Databases, maxDatabases)
	case c.EventLoops < 0:
		return c, fmt.Errorf("server: EventLoops %d is negative", c.EventLoops)
	case c.MaxRequestBytes < 1<<10 || c.MaxRequestBytes > maxRequestBytesLimit:
		return c, fmt.Errorf("server: MaxRequestBytes %d is outside [1 KiB, 1 GiB]", c.MaxRequestBytes)
	case c.MaxBufferedBytes < int64(c.MaxRequestBytes):
		return c, fmt.Errorf("server: MaxBufferedBytes %d is below MaxRequestBytes %d: no request that large could be read", c.MaxBufferedBytes, c.MaxRequestBytes)
	case c.MaxUnauthBufferedBytes < min(minUnauthBufferedBytes, c.MaxBufferedBytes) || c.MaxUnauthBufferedBytes > c.MaxBufferedBytes:
		return c, fmt.Errorf("server: MaxUnauthBufferedBytes %d is outside [%d, MaxBufferedBytes %d]: below it one unauthenticated client could not hold what it may", c.MaxUnauthBufferedBytes, min(minUnauthBufferedBytes, c.MaxBufferedBytes), c.MaxBufferedBytes)
	case c.MaxClients < 0:
		return c, fmt.Errorf("server: MaxClients %d is negative", c.MaxClients)
	case c.MaxFilterBytes < 64:
		return c, fmt.Errorf("server: MaxFilterBytes %d is below one block", c.MaxFilterBytes)
	case c.UnixSocketPerm&^os.ModePerm != 0:
		return c, fmt.Errorf("server: UnixSocketPerm %o is not a permission (at most 777)", c.UnixSocketPerm)
	case c.TLSAddr != "" && c.TLS.CertFile == "":
		return c, errors.New("server: TLSAddr is set but TLS.CertFile is not")
	}
	return c, nil
}

// Server is a running RedisBloom-compatible server.
type Server struct {
	cfg     Config
	store   *store
	started time.Time

	clients  atomic.Int64 // connections open
	nextID   atomic.Int64 // CLIENT ID of the last connection
	buffered atomic.Int64 // bytes reserved of MaxBufferedBytes
	// unauthBuffered is the part of buffered held by clients that have
	// not authenticated, bounded by MaxUnauthBufferedBytes.
	unauthBuffered atomic.Int64
	execLock       execLock
	// iso holds the claims of transactions and of commands off the loops
	// (isolation.go).
	iso  isolation
	auth authGate
	// x is INFO's, CONFIG's, ACL's and CLIENT's state (stats.go).
	x introspection
	// tls is the TLS configuration, reloadable (tls.go).
	tls tlsState

	logPanic, logAccept, logAuth, logOutput logLimiter

	// closing is set when Shutdown begins: a connection handed to a loop
	// after it is closed at once.
	closing atomic.Bool

	mu sync.Mutex
	// listeners are those handed to Serve and ServeTLS, in that order.
	listeners []net.Listener
	// unixPath is the Unix socket served, for CONFIG GET unixsocket;
	// tcpAddr the first plaintext TCP listener's address (INFO's
	// tcp_port, CONFIG GET port). The TLS one is s.tls.addr.
	unixPath atomicString
	tcpAddr  atomic.Pointer[net.Addr]
	loops    *loops
	// startOnce starts the loops and the saves, at the first Serve.
	startOnce sync.Once
	startErr  error
	handlers  sync.WaitGroup // connections open
	acceptors sync.WaitGroup // Serve calls running
	stopSave  chan struct{}
	saveDone  chan struct{}
	serving   bool
	closed    bool
}

// New validates c and restores every filter saved in c.DataDir. A data file
// that does not decode is an error naming it; the server does not start
// over it. MaxClients above what the open-file limit allows is lowered,
// with a warning to the Logger.
func New(c Config) (*Server, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	if limit, ok := maxClientsForFiles(); ok && c.MaxClients > limit {
		c.Logger.Warn("max-clients lowered to fit the open-file limit (RLIMIT_NOFILE)",
			"asked", c.MaxClients, "max_clients", limit, "files_reserved", fileReserve)
		c.MaxClients = limit
	}
	s := &Server{cfg: c, store: newStore(c), started: time.Now(),
		stopSave: make(chan struct{}), saveDone: make(chan struct{})}
	if err := s.tls.init(c.TLS); err != nil {
		return nil, err
	}
	s.auth.init()
	s.iso.init()
	if err := s.store.load(); err != nil {
		return nil, err
	}
	if err := s.initUsers(); err != nil {
		return nil, err
	}
	if err := s.initIntrospection(); err != nil {
		return nil, err
	}
	return s, nil
}

// MaxClients is the number of connections the server serves at once,
// after New fitted it to the open-file limit.
func (s *Server) MaxClients() int { return int(s.x.live.maxClients.Load()) }

// ListenAndServe listens on the configured addresses (Addr; TLSAddr and
// UnixSocket if set) and serves until Shutdown. It returns when the first
// listener fails or Shutdown has closed them all.
func (s *Server) ListenAndServe() error {
	type serveFunc func(net.Listener) error
	var lns []net.Listener
	var serves []serveFunc
	fail := func(err error) error {
		for _, ln := range lns {
			ln.Close()
		}
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fail(err)
	}
	lns, serves = append(lns, ln), append(serves, s.Serve)
	if s.cfg.TLSAddr != "" {
		ln, err := net.Listen("tcp", s.cfg.TLSAddr)
		if err != nil {
			return fail(err)
		}
		lns, serves = append(lns, ln), append(serves, s.ServeTLS)
	}
	if s.cfg.UnixSocket != "" {
		ln, err := ListenUnix(s.cfg.UnixSocket, s.cfg.UnixSocketPerm)
		if err != nil {
			return fail(err)
		}
		lns, serves = append(lns, ln), append(serves, s.Serve)
	}
	errs := make(chan error, len(lns))
	for i, ln := range lns {
		go func() { errs <- serves[i](ln) }()
	}
	var first error
	for range lns {
		if err := <-errs; err != nil && first == nil {
			first = err
			s.closeListeners()
		}
	}
	return first
}

// Serve serves plaintext connections from ln until Shutdown: a TCP or a
// Unix socket listener (ListenUnix). It may be called for several
// listeners, and with ServeTLS, at once; the first call starts the event
// loops and the saves of changed filters every SaveInterval.
func (s *Server) Serve(ln net.Listener) error { return s.serve(ln, false) }

// ServeTLS serves TLS connections from ln until Shutdown, with the
// certificates of Config.TLS (reloadable: ReloadTLS). As Serve otherwise.
func (s *Server) ServeTLS(ln net.Listener) error {
	if s.tls.current.Load() == nil {
		ln.Close()
		return errors.New("server: ServeTLS without a TLS configuration (Config.TLS.CertFile)")
	}
	a := ln.Addr()
	s.tls.addr.Store(&a)
	return s.serve(ln, true)
}

func (s *Server) serve(ln net.Listener, secure bool) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return errors.New("server: shut down")
	}
	s.listeners = append(s.listeners, ln)
	s.serving = true
	s.acceptors.Add(1)
	s.mu.Unlock()
	defer s.acceptors.Done()
	if ul, ok := ln.(*net.UnixListener); ok {
		s.unixPath.Store(ul.Addr().String())
	} else if !secure {
		a := ln.Addr()
		s.tcpAddr.CompareAndSwap(nil, &a)
	}
	s.startOnce.Do(func() {
		loops, err := startLoops(s, s.cfg.EventLoops, servePerConnection)
		if err != nil {
			s.startErr = fmt.Errorf("server: starting the event loops: %w", err)
			close(s.saveDone) // what Shutdown waits for: nothing runs
			return
		}
		go s.saveLoop()
		s.mu.Lock()
		s.loops = loops
		s.mu.Unlock()
	})
	if s.startErr != nil {
		ln.Close()
		return s.startErr
	}
	return s.acceptLoop(ln, secure)
}

// closeListeners closes every listener (a failed one ends ListenAndServe).
func (s *Server) closeListeners() {
	s.mu.Lock()
	lns := slices.Clone(s.listeners)
	s.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
}

// acceptLoop accepts connections until the listener closes. Accept errors
// (out of file descriptors, most often) are retried after a pause that
// doubles from 5 ms to 1 s, as net/http does, and logged at most once a
// second: a full file table must not become a spinning core and a flood
// of log lines.
func (s *Server) acceptLoop(ln net.Listener, secure bool) error {
	s.mu.Lock()
	loops := s.loops
	s.mu.Unlock()
	// A Unix socket's clients have no address of their own: Redis shows
	// the socket's path, port 0.
	unixAddr := ""
	if _, ok := ln.(*net.UnixListener); ok {
		unixAddr = ln.Addr().String() + ":0"
	}
	var pause time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			s.logAccept.log(s.cfg.Logger, "accept failed; retrying", "err", err, "pause", pause)
			time.Sleep(pause)
			continue
		}
		pause = 0
		if s.clients.Add(1) > s.x.live.maxClients.Load() {
			s.clients.Add(-1)
			s.x.rejectedConnections.Add(1)
			// The reply is short and the socket new: the write does not block.
			conn.Write([]byte("-ERR max number of clients reached\r\n"))
			conn.Close()
			continue
		}
		// A Unix socket's clients show the socket's path as both their
		// addresses, and flag U in CLIENT LIST, as Redis's.
		addr, laddr := unixAddr, unixAddr
		if addr == "" {
			addr, laddr = conn.RemoteAddr().String(), conn.LocalAddr().String()
		}
		c := s.newClient(addr)
		c.sess.info.laddr = laddr
		if unixAddr != "" {
			c.sess.info.setFlag(clientUnixSocket, true)
		}
		s.mu.Lock()
		closed := s.closed
		if !closed {
			s.handlers.Add(1)
		}
		s.mu.Unlock()
		if closed {
			s.clients.Add(-1)
			conn.Close()
			return nil
		}
		if secure {
			// The handshake, and then the connection, on a goroutine of
			// its own (tls.go).
			go s.serveTLSConn(loops, conn, c)
			continue
		}
		// The event loop takes a duplicate of the socket and closes conn.
		// (Not under s.mu: the loop may be closing another connection,
		// which takes s.mu.)
		if err := loops.enroll(conn, c); err != nil {
			s.clients.Add(-1)
			s.handlers.Done()
			s.logAccept.log(s.cfg.Logger, "accept failed: handing the connection to an event loop", "err", err)
			time.Sleep(pause) // out of file descriptors, most often
		}
	}
}

// servePerConnection, set by tests, serves each connection on a goroutine
// of its own rather than an event loop, as where there is no epoll.
var servePerConnection bool

// closed1 forgets a connection its event loop closed.
func (s *Server) closed1(c *connection) {
	s.forget(c)
	s.clients.Add(-1)
	s.handlers.Done()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Addr returns the address of the plaintext TCP listener served, or if
// there is none the first listener served, once Serve or ServeTLS has
// started.
func (s *Server) Addr() net.Addr {
	if a := s.tcpAddr.Load(); a != nil {
		return *a
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.listeners) == 0 {
		return nil
	}
	return s.listeners[0].Addr()
}

// saveLoop saves every SaveInterval, and runs the active expiry cycle
// (expire.go) ten times a second, as Redis's hz 10.
func (s *Server) saveLoop() {
	defer close(s.saveDone)
	var saves <-chan time.Time
	if s.cfg.SaveInterval > 0 {
		tick := time.NewTicker(s.cfg.SaveInterval)
		defer tick.Stop()
		saves = tick.C
	}
	expiry := time.NewTicker(expiryPeriod)
	defer expiry.Stop()
	for {
		select {
		case <-expiry.C:
			s.expireCycle(expiryCycleBudget)
		case <-s.store.expiry.soon:
			s.expireCycle(expiryCycleBudget)
		case <-saves:
			if err := s.store.save(false); err != nil {
				s.cfg.Logger.Error("scheduled save", "err", err)
			}
		case <-s.stopSave:
			return
		}
	}
}

// Shutdown stops accepting connections, closes the open ones, waits for
// their commands to finish and saves every changed filter. A command
// whose reply a client received is in the saved files. ctx bounds the
// wait for the connections. A listener handed to a Serve call that has
// not begun when Shutdown runs is closed by that Serve when it begins,
// not by Shutdown, so until then the kernel may still queue connections
// on it.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.closing.Store(true)
	lns, serving := s.listeners, s.serving
	loops := s.loops
	s.mu.Unlock()
	if loops != nil {
		loops.closeAll()
	}
	if serving {
		for _, ln := range lns {
			ln.Close() // a Unix socket's file goes with it
		}
		done := make(chan struct{})
		go func() { s.acceptors.Wait(); s.handlers.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.mu.Lock()
		loops = s.loops // Serve may have started them after we looked
		s.mu.Unlock()
		if loops != nil {
			loops.stop()
		}
		close(s.stopSave)
		<-s.saveDone
	}
	s.stopCron()
	return s.store.shutdown()
}

// Save writes every changed filter now, as the schedule would.
func (s *Server) Save() error { return s.store.save(false) }
