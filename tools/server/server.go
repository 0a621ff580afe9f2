// Package server serves ohbloom filters over the Redis protocol, with
// RedisBloom's commands, so that any Redis client (redis-cli, go-redis,
// redis-py, Jedis) can share a filter unchanged.
//
// BF.* keys are scalable one-hash blocked filters (NONSCALING: a fixed
// filter), CF.* keys counting filters, so that CF.DEL works; see the
// README's "Server" section for what differs from RedisBloom. Filters are
// saved crash-safely to a data directory on a schedule and on shutdown,
// and restored on start.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"
)

// Config configures a Server. The zero value of each field means its
// default.
type Config struct {
	// Addr is the address to listen on; default 127.0.0.1:6379, loopback
	// only, as Redis's own protected mode.
	Addr string
	// DataDir holds one file per key. Empty keeps the filters in memory
	// only, lost at exit.
	DataDir string
	// SaveInterval is how often changed filters are saved; default one
	// minute, negative for never (they are still saved on shutdown).
	SaveInterval time.Duration
	// Password, when set, must be given with AUTH (or HELLO's AUTH)
	// before any other command, as Redis's requirepass.
	Password string
	// MaxFilterBytes bounds the memory of one filter: reservations that
	// would exceed it are refused, and a scalable filter stops growing
	// past it. Default 1 GiB.
	MaxFilterBytes uint64
	// MaxRequestBytes bounds one request (one command with its
	// arguments); a client sending more is told and disconnected. Default
	// 64 MiB.
	MaxRequestBytes int64
	// MaxClients bounds the connections served at once; default 10000.
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
	// Logger receives errors of saves and connections; default
	// slog.Default().
	Logger *slog.Logger
}

// Defaults for Config's zero fields.
const (
	DefaultAddr            = "127.0.0.1:6379"
	DefaultSaveInterval    = time.Minute
	DefaultMaxFilterBytes  = 1 << 30
	DefaultMaxRequestBytes = 64 << 20
	DefaultMaxClients      = 10000
)

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
	if c.MaxClients == 0 {
		c.MaxClients = DefaultMaxClients
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	switch {
	case c.MaxRequestBytes < 1<<10:
		return c, fmt.Errorf("server: MaxRequestBytes %d is below 1 KiB", c.MaxRequestBytes)
	case c.MaxClients < 0:
		return c, fmt.Errorf("server: MaxClients %d is negative", c.MaxClients)
	case c.MaxFilterBytes < 64:
		return c, fmt.Errorf("server: MaxFilterBytes %d is below one block", c.MaxFilterBytes)
	}
	return c, nil
}

// Server is a running RedisBloom-compatible server.
type Server struct {
	cfg     Config
	store   *store
	clients atomic.Int64
	started time.Time

	mu       sync.Mutex
	redcon   *redcon.Server
	ln       net.Listener
	served   chan struct{} // closed when Serve returns
	stopSave chan struct{}
	saveDone chan struct{}
	closed   bool
}

// New validates c and restores every filter saved in c.DataDir. A data file
// that does not decode is an error naming it; the server does not start
// over it.
func New(c Config) (*Server, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: c, store: newStore(c), started: time.Now(),
		served: make(chan struct{}), stopSave: make(chan struct{}), saveDone: make(chan struct{})}
	if err := s.store.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// ListenAndServe listens on the configured address and serves until
// Shutdown.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Serve serves connections from ln until Shutdown. It saves changed
// filters every SaveInterval meanwhile.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed || s.redcon != nil {
		s.mu.Unlock()
		ln.Close()
		return errors.New("server: already serving or shut down")
	}
	s.ln = ln
	s.redcon = redcon.NewServer(ln.Addr().String(), s.serveRESP, s.accept, s.closedConn)
	s.redcon.AcceptError = func(err error) { s.cfg.Logger.Warn("accept", "err", err) }
	srv := s.redcon
	s.mu.Unlock()
	go s.saveLoop()
	defer close(s.served)
	return srv.Serve(&limitListener{Listener: ln, maxRequest: s.cfg.MaxRequestBytes})
}

// Addr returns the address the server listens on, once Serve has started.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

func (s *Server) saveLoop() {
	defer close(s.saveDone)
	if s.cfg.SaveInterval < 0 {
		<-s.stopSave
		return
	}
	tick := time.NewTicker(s.cfg.SaveInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if err := s.store.save(false); err != nil {
				s.cfg.Logger.Error("scheduled save", "err", err)
			}
		case <-s.stopSave:
			return
		}
	}
}

// Shutdown stops accepting connections, closes the open ones, waits for
// Serve to return and saves every changed filter. A command whose reply a
// client received is in the saved files. ctx bounds the wait for Serve.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	srv := s.redcon
	s.mu.Unlock()
	if srv != nil {
		srv.Close()
		select {
		case <-s.served:
		case <-ctx.Done():
			return ctx.Err()
		}
		close(s.stopSave)
		<-s.saveDone
	}
	return s.store.shutdown()
}

// Save writes every changed filter now, as the schedule would.
func (s *Server) Save() error { return s.store.save(false) }

// session is one connection's state.
type session struct {
	authed bool
	name   string
	quit   bool
	log    logWait
}

func (s *Server) accept(c redcon.Conn) bool {
	if s.clients.Add(1) > int64(s.cfg.MaxClients) {
		s.clients.Add(-1)
		c.NetConn().Write([]byte("-ERR max number of clients reached\r\n"))
		return false
	}
	c.SetContext(&session{authed: s.cfg.Password == "", log: logWait{deferred: true}})
	return true
}

func (s *Server) closedConn(c redcon.Conn, err error) {
	s.clients.Add(-1)
	if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, errRequestTooLarge) {
		s.cfg.Logger.Debug("connection closed", "remote", c.RemoteAddr(), "err", err)
	}
}

func (s *Server) serveRESP(c redcon.Conn, cmd redcon.Command) {
	sess, _ := c.Context().(*session)
	if sess == nil {
		sess = &session{authed: s.cfg.Password == "", log: logWait{deferred: true}}
		c.SetContext(sess)
	}
	s.exec(sess, c, cmd.Args)
	// redcon writes the replies of a pipeline once its last command has
	// run: the changes among them wait for the log together, and if the
	// log failed no reply goes out.
	if sess.log.pos != 0 && len(c.PeekPipeline()) == 0 {
		if err := s.syncLog(sess); err != nil {
			c.NetConn().Close()
			return
		}
	}
	if sess.quit {
		c.Close()
	}
}
