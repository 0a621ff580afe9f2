package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CONFIG GET, SET, RESETSTAT, REWRITE as Redis 7's config.c answers them,
// for the settings this server has, and the configuration file in
// Redis's syntax (ReadConfigFile).
//
// A setting has Redis's name where Redis has it (maxmemory, maxclients,
// appendfsync, requirepass, slowlog-*), else the name of its flag
// (max-filter-bytes). Those that change while the server runs are set
// by CONFIG SET, several at once and all or none, as Redis 7; the others
// size what is already allocated (buffers, filters, the event loops, the
// data directory) and take a restart: CONFIG SET answers Redis's "can't
// set immutable config".

// configParam is one setting.
type configParam struct {
	name string
	// load sets it in a Config being read from a file; nil for a setting
	// applied once the server runs (set).
	load func(c *Config, v string) error
	get  func(s *Server) string
	// set checks v and returns what applies it; nil for an immutable
	// setting.
	set func(s *Server, v string) (func(), error)
	// def is its default as CONFIG GET shows it, for CONFIG REWRITE.
	def       string
	sensitive bool
	// memory: a byte count, which CONFIG REWRITE writes in the largest
	// unit that divides it (100mb), as Redis does.
	memory bool
	// derived: its value here may come from elsewhere than a setting
	// (the event loops from the cores, the port from the listener, the
	// log from --dir): CONFIG REWRITE updates its line if the file has
	// one, and never adds one.
	derived bool
	// tls: a tls-* setting, which CONFIG SET changes with the other tls-*
	// settings given with it, all loaded at once (prepareTLS), not by set.
	tls bool
	// secret: CONFIG GET does not show it (tls-key-file-pass, a key's
	// passphrase); CONFIG REWRITE writes it, as requirepass.
	secret bool
}

// configParams are the settings, by name; registerConfig adds one.
var configParams = map[string]*configParam{}

func registerConfig(p *configParam) { configParams[p.name] = p }

// Errors of values, Redis's texts.
var (
	errNotMemory  = errors.New("argument must be a memory value")
	errNotInteger = errors.New("argument couldn't be parsed into an integer")
	errNotYesNo   = errors.New("argument must be 'yes' or 'no'")
)

func errBetween(lo, hi int64) error {
	return fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
}

func errOneOf(vals ...string) error {
	return errors.New("argument(s) must be one of the following: " + strings.Join(vals, ", "))
}

// ParseMemory reads a memory value as Redis does (maxmemory 1gb): digits
// and an optional unit, b, k (1000), kb (1024), m, mb, g, gb, any case.
func ParseMemory(v string) (int64, error) { return parseMemory(v) }

// parseMemory reads a memory value as Redis's memtoull: digits and an
// optional unit, b, k (1000), kb (1024), m, mb, g, gb, any case.
func parseMemory(v string) (int64, error) {
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	mul := int64(0)
	switch strings.ToLower(v[i:]) {
	case "", "b":
		mul = 1
	case "k":
		mul = 1000
	case "kb":
		mul = 1024
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1024 * 1024
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1024 * 1024 * 1024
	}
	if mul == 0 || i == 0 {
		return 0, errNotMemory
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	if err != nil || n > math.MaxInt64/mul {
		return 0, errNotMemory
	}
	return n * mul, nil
}

// parseBounded reads an integer (string2ll: no sign but '-', no spaces)
// within [lo, hi].
func parseBounded(v string, lo, hi int64) (int64, error) {
	n, ok := parseInt([]byte(v))
	if !ok {
		return 0, errNotInteger
	}
	if n < lo || n > hi {
		return 0, errBetween(lo, hi)
	}
	return n, nil
}

func parseMemoryBounded(v string, lo, hi int64) (int64, error) {
	n, err := parseMemory(v)
	if err != nil {
		return 0, err
	}
	if n < lo || n > hi {
		return 0, errBetween(lo, hi)
	}
	return n, nil
}

func yesNo(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	}
	return false, errNotYesNo
}

func yesNoString(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func i64(n int64) string { return strconv.FormatInt(n, 10) }

func init() {
	live := func(f func(s *Server) int64) func(s *Server) string {
		return func(s *Server) string { return i64(f(s)) }
	}
	for _, p := range []*configParam{
		{name: "maxmemory", memory: true, def: "0",
			load: func(c *Config, v string) error {
				n, err := parseMemory(v)
				c.MaxMemory = uint64(n)
				return err
			},
			get: live(func(s *Server) int64 { return s.x.live.maxMemory.Load() }),
			set: func(s *Server, v string) (func(), error) {
				n, err := parseMemory(v)
				if err != nil {
					return nil, err
				}
				return func() {
					s.x.live.maxMemory.Store(n)
					if n > 0 {
						if used := s.x.mem.refresh().used; used > n {
							s.cfg.Logger.Warn("WARNING: the new maxmemory value set via CONFIG SET is smaller than the current memory usage: writes that may add memory are refused until it drops", "maxmemory", n, "used_memory", used)
						}
					}
				}, nil
			}},
		{name: "maxmemory-policy", def: "noeviction",
			get: func(*Server) string { return "noeviction" },
			set: func(s *Server, v string) (func(), error) {
				if !strings.EqualFold(v, "noeviction") {
					return nil, errOneOf("noeviction")
				}
				return func() {}, nil
			}},
		{name: "maxmemory-samples", def: "5", get: func(*Server) string { return "5" }},
		{name: "appendfsync", def: "everysec",
			load: func(c *Config, v string) error {
				if _, err := parseFsync(strings.ToLower(v)); err != nil || v == "" {
					return errOneOf("everysec", "always", "no")
				}
				c.AppendFsync = strings.ToLower(v)
				return nil
			},
			get: func(s *Server) string { return s.appendFsync() },
			set: func(s *Server, v string) (func(), error) {
				p, err := parseFsync(strings.ToLower(v))
				if err != nil || v == "" {
					return nil, errOneOf("everysec", "always", "no")
				}
				return func() {
					s.cfg.AppendFsync = p.String()
					if l := s.store.log; l != nil {
						l.setPolicy(p)
					}
				}, nil
			}},
		{name: "appendonly", def: "yes", derived: true,
			load: func(c *Config, v string) error {
				on, err := yesNo(v)
				c.DisableAppendLog = !on
				return err
			},
			get: func(s *Server) string { return s.appendOnlySetting() }},
		{name: "requirepass", def: "", sensitive: true,
			load: func(c *Config, v string) error { c.Password = v; return nil },
			get:  func(s *Server) string { return s.cfg.Password },
			set: func(s *Server, v string) (func(), error) {
				return func() {
					a := &s.x.acl
					a.mu.Lock()
					s.cfg.Password = v
					s.setDefaultPassword(v)
					s.usersChanged()
					a.mu.Unlock()
				}, nil
			}},
		{name: "slowlog-log-slower-than", def: "10000",
			get: live(func(s *Server) int64 { return s.x.live.slowlogSlowerThan.Load() }),
			set: func(s *Server, v string) (func(), error) {
				n, err := parseBounded(v, -1, math.MaxInt64)
				return func() { s.x.live.slowlogSlowerThan.Store(n) }, err
			}},
		{name: "slowlog-max-len", def: "128",
			get: live(func(s *Server) int64 { return s.x.live.slowlogMaxLen.Load() }),
			set: func(s *Server, v string) (func(), error) {
				n, err := parseBounded(v, 0, math.MaxInt64)
				return func() { s.x.live.slowlogMaxLen.Store(n); s.x.slowlog.trim(n) }, err
			}},
		{name: "latency-monitor-threshold", def: "0",
			get: live(func(s *Server) int64 { return s.x.live.latencyThreshold.Load() }),
			set: func(s *Server, v string) (func(), error) {
				n, err := parseBounded(v, 0, math.MaxInt64)
				return func() { s.x.live.latencyThreshold.Store(n) }, err
			}},
		{name: "maxclients", def: i64(DefaultMaxClients),
			load: func(c *Config, v string) error {
				n, err := parseBounded(v, 1, math.MaxUint32)
				c.MaxClients = int(n)
				return err
			},
			get: live(func(s *Server) int64 { return s.x.live.maxClients.Load() }),
			set: func(s *Server, v string) (func(), error) {
				n, err := parseBounded(v, 1, math.MaxUint32)
				if err != nil {
					return nil, err
				}
				if limit, ok := maxClientsForFiles(); ok && n > int64(limit) {
					return nil, fmt.Errorf("The operating system is not able to handle the specified number of clients, try with %d", limit)
				}
				return func() { s.x.live.maxClients.Store(n) }, nil
			}},
		{name: "max-buffered-bytes", memory: true, def: i64(DefaultMaxBufferedBytes),
			load: func(c *Config, v string) error {
				n, err := parseMemory(v)
				c.MaxBufferedBytes = n
				return err
			},
			get: live(func(s *Server) int64 { return s.x.live.maxBufferedBytes.Load() }),
			set: func(s *Server, v string) (func(), error) {
				n, err := parseMemoryBounded(v, int64(s.cfg.MaxRequestBytes), math.MaxInt64)
				if err != nil {
					return nil, err
				}
				return func() {
					s.x.live.maxBufferedBytes.Store(n)
					if s.x.live.maxUnauthBufferedBytes.Load() > n {
						s.x.live.maxUnauthBufferedBytes.Store(n)
					}
				}, nil
			}},
		{name: "max-unauth-buffered-bytes", memory: true, def: i64(DefaultMaxUnauthBufferedBytes),
			load: func(c *Config, v string) error {
				n, err := parseMemory(v)
				c.MaxUnauthBufferedBytes = n
				return err
			},
			get: live(func(s *Server) int64 { return s.x.live.maxUnauthBufferedBytes.Load() }),
			set: func(s *Server, v string) (func(), error) {
				max := s.x.live.maxBufferedBytes.Load()
				n, err := parseMemoryBounded(v, min(minUnauthBufferedBytes, max), max)
				return func() { s.x.live.maxUnauthBufferedBytes.Store(n) }, err
			}},
		// Set at start only: they size what is allocated already.
		{name: "max-request-bytes", memory: true, def: i64(DefaultMaxRequestBytes),
			load: func(c *Config, v string) error {
				n, err := parseMemory(v)
				c.MaxRequestBytes = int(min(n, math.MaxInt32))
				return err
			},
			get: func(s *Server) string { return strconv.Itoa(s.cfg.MaxRequestBytes) }},
		{name: "proto-max-bulk-len", def: i64(DefaultMaxRequestBytes),
			get: func(s *Server) string { return strconv.Itoa(s.cfg.MaxRequestBytes) }},
		{name: "max-filter-bytes", memory: true, def: i64(DefaultMaxFilterBytes),
			load: func(c *Config, v string) error {
				n, err := parseMemory(v)
				c.MaxFilterBytes = uint64(n)
				return err
			},
			get: func(s *Server) string { return strconv.FormatUint(s.cfg.MaxFilterBytes, 10) }},
		{name: "max-upload-bytes", memory: true, def: "0",
			load: func(c *Config, v string) error {
				n, err := parseMemory(v)
				c.MaxUploadBytes = uint64(n)
				return err
			},
			get: func(s *Server) string { return strconv.FormatUint(s.cfg.MaxUploadBytes, 10) }},
		{name: "max-dump-bytes", memory: true, def: "0",
			load: func(c *Config, v string) error {
				n, err := parseMemory(v)
				c.MaxDumpBytes = uint64(n)
				return err
			},
			get: func(s *Server) string { return strconv.FormatUint(s.cfg.MaxDumpBytes, 10) }},
		{name: "event-loops", def: "0", derived: true,
			load: func(c *Config, v string) error {
				n, err := parseBounded(v, 0, 1024)
				c.EventLoops = int(n)
				return err
			},
			get: func(s *Server) string { return strconv.Itoa(s.cfg.EventLoops) }},
		{name: "save-interval", def: DefaultSaveInterval.String(),
			load: func(c *Config, v string) error {
				d, err := time.ParseDuration(v)
				if err != nil || d == 0 {
					return errors.New("argument must be a non-zero duration, as 1m or -1s")
				}
				c.SaveInterval = d
				return nil
			},
			get: func(s *Server) string { return s.cfg.SaveInterval.String() }},
		{name: "databases", def: strconv.Itoa(DefaultDatabases),
			load: func(c *Config, v string) error {
				n, err := parseBounded(v, 1, maxDatabases-1)
				c.Databases = int(n)
				return err
			},
			get: func(s *Server) string { return strconv.Itoa(len(s.store.dbs)) }},
		{name: "dir", def: "",
			load: func(c *Config, v string) error { c.DataDir = v; return nil },
			get:  func(s *Server) string { return s.cfg.DataDir }},
		{name: "aclfile", def: "",
			load: func(c *Config, v string) error { c.ACLFile = v; return nil },
			get:  func(s *Server) string { return s.cfg.ACLFile }},
		{name: "save", def: "", get: func(*Server) string { return "" }},
		{name: "timeout", def: "0", get: func(*Server) string { return "0" }},
	} {
		registerConfig(p)
	}
	// port and bind read and show the address (--addr).
	registerConfig(&configParam{name: "port", def: "6379", derived: true,
		load: func(c *Config, v string) error {
			n, err := parseBounded(v, 0, 65535)
			host, _, _ := splitHostPort(c.addr())
			c.Addr = joinHostPort(host, int(n))
			return err
		},
		get: func(s *Server) string {
			if _, p := listenerHostPort(s.tcpAddr.Load()); p > 0 {
				return strconv.Itoa(p)
			}
			_, p, _ := splitHostPort(s.cfg.Addr)
			return strconv.Itoa(p)
		}})
	registerConfig(&configParam{name: "bind", def: "127.0.0.1", derived: true,
		load: func(c *Config, v string) error {
			if strings.Contains(v, " ") {
				return errors.New("ohbloom serve binds one address")
			}
			_, p, _ := splitHostPort(c.addr())
			c.Addr = joinHostPort(strings.TrimPrefix(v, "-"), p)
			if c.TLSAddr != "" { // tls-port given before bind: on bind's host too
				_, tp, _ := splitHostPort(c.TLSAddr)
				c.TLSAddr = joinHostPort(strings.TrimPrefix(v, "-"), tp)
			}
			return nil
		},
		get: func(s *Server) string {
			h, _, _ := splitHostPort(s.cfg.Addr)
			return strings.Trim(h, "[]")
		}})
}

func (c *Config) addr() string {
	if c.Addr == "" {
		return DefaultAddr
	}
	return c.Addr
}

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(port)
}

// appendFsync is the fsync policy in force (or set, without the log).
func (s *Server) appendFsync() string {
	if l := s.store.log; l != nil {
		return l.policy().String()
	}
	if s.cfg.AppendFsync == "" {
		return "everysec"
	}
	return s.cfg.AppendFsync
}

// lookupConfig finds a setting by name, any case.
func lookupConfig(name string) *configParam { return configParams[strings.ToLower(name)] }

// cmdConfigGet is CONFIG GET parameter [parameter ...]: each a name (any
// case, answered as given) or a glob pattern (any case, at most
// maxPatternBytes; Redis takes any: a 60 MB one took it seconds).
func cmdConfigGet(s *Server, _ *session, w replier, args [][]byte) {
	s.x.configMu.Lock()
	defer s.x.configMu.Unlock()
	type kv struct{ k, v string }
	var out []kv
	seen := map[string]bool{}
	for _, a := range args[2:] {
		if bytes.IndexAny(a, "[*?") < 0 {
			p := lookupConfig(string(a))
			if p != nil && !p.secret && !seen[p.name] {
				seen[p.name] = true
				out = append(out, kv{string(a), p.get(s)})
			}
			continue
		}
		if len(a) > maxPatternBytes {
			w.WriteError(errPatternTooLong)
			return
		}
		g := compileGlob(string(a), true)
		for _, name := range sortedKeys(configParams) {
			if !seen[name] && !configParams[name].secret && g.match(name) {
				seen[name] = true
				out = append(out, kv{name, configParams[name].get(s)})
			}
		}
	}
	w.WriteMap(len(out))
	for _, p := range out {
		w.WriteBulkString(p.k)
		w.WriteBulkString(p.v)
	}
}

// cmdConfigSet is CONFIG SET parameter value [parameter value ...]: every
// value is checked before any is applied, so that all change or none.
func cmdConfigSet(s *Server, _ *session, w replier, args [][]byte) {
	if len(args)%2 != 0 {
		w.WriteError("ERR syntax error")
		return
	}
	s.x.configMu.Lock()
	defer s.x.configMu.Unlock()
	var params []*configParam
	var applies []func()
	fail := func(name string, err error) {
		w.WriteError(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", name, err))
	}
	for i := 2; i < len(args); i += 2 {
		p := lookupConfig(string(args[i]))
		if p == nil {
			w.WriteError(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", args[i]))
			return
		}
		if p.set == nil && !p.tls {
			fail(string(args[i]), errors.New("can't set immutable config"))
			return
		}
		if slices.Contains(params, p) {
			fail(string(args[i]), errors.New("duplicate parameter"))
			return
		}
		params = append(params, p)
	}
	var tlsChanges [][2]string
	for i, p := range params {
		if p.tls {
			tlsChanges = append(tlsChanges, [2]string{p.name, string(args[3+2*i])})
			continue
		}
		apply, err := p.set(s, string(args[3+2*i]))
		if err != nil {
			fail(p.name, err)
			return
		}
		applies = append(applies, apply)
	}
	if len(tlsChanges) > 0 {
		apply, name, err := s.prepareTLS(tlsChanges)
		if err != nil {
			fail(name, err)
			return
		}
		applies = append(applies, apply)
	}
	for _, apply := range applies {
		apply()
	}
	w.WriteString("OK")
}

func cmdConfigResetstat(s *Server, _ *session, w replier, _ [][]byte) {
	s.resetStats()
	s.x.slowlog.reset()
	w.WriteString("OK")
}

// cmdConfigRewrite rewrites the configuration file with the settings in
// force, as Redis's rewriteConfig: a setting's first line takes its
// value and its other lines go; a setting not in the file and not at its
// default is added after the line "# Generated by CONFIG REWRITE"; every
// other line (comments, settings this server ignores) stays.
func cmdConfigRewrite(s *Server, _ *session, w replier, _ [][]byte) {
	path := s.x.configFile
	if path == "" {
		w.WriteError("ERR The server is running without a config file")
		return
	}
	s.x.configMu.Lock()
	defer s.x.configMu.Unlock()
	if err := s.rewriteConfig(path); err != nil {
		s.cfg.Logger.Error("CONFIG REWRITE", "file", path, "err", err)
		w.WriteError("ERR Rewriting config file: " + oneLine(unwrapPath(err).Error()))
		return
	}
	w.WriteString("OK")
}

const rewriteSignature = "# Generated by CONFIG REWRITE"

func (s *Server) rewriteConfig(path string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(old) > maxConfigFileBytes {
		return fmt.Errorf("%s is larger than %d bytes", path, maxConfigFileBytes)
	}
	lines := strings.Split(strings.TrimSuffix(string(old), "\n"), "\n")
	if len(old) == 0 {
		lines = nil
	}
	// Drop the lines of an earlier rewrite's signature: it is written anew.
	at := map[string][]int{}
	for i, l := range lines {
		if strings.TrimSpace(l) == rewriteSignature {
			lines[i] = "\x00"
			continue
		}
		argv, err := splitConfigLine(strings.TrimSpace(l))
		if err != nil || len(argv) == 0 || strings.HasPrefix(argv[0], "#") {
			continue
		}
		name := strings.ToLower(argv[0])
		if p := lookupConfig(name); p != nil {
			at[p.name] = append(at[p.name], i)
		}
	}
	var added []string
	for _, name := range sortedKeys(configParams) {
		p := configParams[name]
		if p.load == nil && p.set == nil {
			continue // shown by CONFIG GET, not a setting of the file
		}
		v := p.get(s)
		out := v
		if p.memory {
			out = memoryUnits(v)
		}
		line := name + " " + quoteConfigValue(out)
		if idx := at[name]; len(idx) > 0 {
			lines[idx[0]] = line
			for _, i := range idx[1:] {
				lines[i] = "\x00"
			}
		} else if v != p.def && !p.derived {
			added = append(added, line)
		}
	}
	var b strings.Builder
	for _, l := range lines {
		if l != "\x00" {
			b.WriteString(l + "\n")
		}
	}
	if len(added) > 0 {
		b.WriteString(rewriteSignature + "\n")
		for _, l := range added {
			b.WriteString(l + "\n")
		}
	}
	if err := writeAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, b.String()); return err }); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// memoryUnits writes a byte count in the largest of gb, mb, kb that
// divides it, as Redis's rewriteConfigBytesOption.
func memoryUnits(v string) string {
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil || n == 0:
		return v
	case n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "gb"
	case n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "mb"
	case n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "kb"
	}
	return v
}

// quoteConfigValue quotes a value as Redis's rewrite does when it holds
// anything but printable ASCII without quotes, or is empty: any other
// byte (\f and \v are spaces to the reader) would split or change the
// value when read back.
func quoteConfigValue(v string) string {
	if v != "" && !needsConfigQuotes(v) {
		return v
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString("\\n")
		case '\r':
			b.WriteString("\\r")
		case '\t':
			b.WriteString("\\t")
		default:
			if c < 32 || c > 126 {
				fmt.Fprintf(&b, "\\x%02x", c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func needsConfigQuotes(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= ' ' || c > '~' || c == '"' || c == '\'' || c == '\\' {
			return true
		}
	}
	return false
}

var configHelp = []string{
	"GET <pattern>",
	"    Return parameters matching the glob-like <pattern> and their values.",
	"SET <directive> <value>",
	"    Set the configuration <directive> to <value>.",
	"RESETSTAT",
	"    Reset statistics reported by the INFO command.",
	"REWRITE",
	"    Rewrite the configuration file.",
}

// maxConfigFileBytes bounds a configuration file read.
const maxConfigFileBytes = 16 << 20

// ReadConfigFile reads a configuration file in Redis's syntax into c: a
// directive a line, "name value", values quoted as Redis quotes them,
// comments after '#'. Settings this server has are set (the ones that
// change at run time are applied when the server starts); directives of
// Redis's that it does not have are logged and skipped, so that a
// redis.conf can be used; anything else, and "user" (use --aclfile), is
// an error naming the line. c.ConfigFile is set to path, for CONFIG
// REWRITE.
func ReadConfigFile(path string, c *Config) error {
	f, err := openRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFileBytes+1))
	if err != nil {
		return err
	}
	if len(data) > maxConfigFileBytes {
		return fmt.Errorf("%s: larger than %d bytes", path, maxConfigFileBytes)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	c.ConfigFile = abs
	return parseConfig(data, path, c)
}

// parseConfig reads a configuration file's bytes into c (ReadConfigFile).
func parseConfig(data []byte, path string, c *Config) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxConfigFileBytes)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		bad := func(msg string) error {
			return fmt.Errorf("config file %s, line %d: >>> '%s': %s", path, n, line, msg)
		}
		argv, err := splitConfigLine(line)
		if err != nil {
			return bad("Unbalanced quotes in configuration line")
		}
		name := strings.ToLower(argv[0])
		p := lookupConfig(name)
		switch {
		case name == "user":
			return bad("users are read from an ACL file here (aclfile or --aclfile), not from the configuration file")
		case p == nil && redisConfigNames[name]:
			c.ignoredSettings = append(c.ignoredSettings, name)
			continue
		case p == nil || len(argv) != 2 && name != "save":
			return bad("Bad directive or wrong number of arguments")
		case p.load != nil:
			if err := p.load(c, argv[1]); err != nil {
				return bad(err.Error())
			}
		case p.set != nil:
			c.Settings = append(c.Settings, [2]string{name, argv[1]})
		}
	}
	return sc.Err()
}

// applySettings applies, at start, the settings of the configuration
// file that change at run time (Config.Settings).
func (s *Server) applySettings() error {
	for _, kv := range s.cfg.Settings {
		p := lookupConfig(kv[0])
		if p == nil || p.set == nil {
			return fmt.Errorf("server: setting %q cannot be set", kv[0])
		}
		apply, err := p.set(s, kv[1])
		if err != nil {
			return fmt.Errorf("server: %s %q: %w", kv[0], kv[1], err)
		}
		apply()
	}
	for _, name := range s.cfg.ignoredSettings {
		s.cfg.Logger.Info("config file: a setting of Redis's that ohbloom serve does not have; skipped", "setting", name)
	}
	return nil
}

// splitConfigLine splits a line into words as Redis's sdssplitargs, with
// the inline command's parser (resp.go).
func splitConfigLine(line string) ([]string, error) {
	var p requestParser
	b := []byte(line)
	if err := p.splitArgs(b); err != nil {
		return nil, err
	}
	args := p.argsOf(b)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// redisConfigNames are Redis 7.4's settings (config.c's table and the
// directives it reads itself): a configuration file may hold those this
// server does not have.
var redisConfigNames = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(`acl-pubsub-default aclfile acllog-max-len active-defrag-cycle-max
		active-defrag-cycle-min active-defrag-ignore-bytes active-defrag-max-scan-fields
		active-defrag-threshold-lower active-defrag-threshold-upper active-expire-effort activedefrag
		activerehashing always-show-logo aof-disable-auto-gc aof-load-truncated aof-rewrite-cpulist
		aof-rewrite-incremental-fsync aof-timestamp-enabled aof-use-rdb-preamble appenddirname
		appendfilename appendfsync appendonly auto-aof-rewrite-min-size auto-aof-rewrite-percentage
		bgsave-cpulist bind bind-source-addr bio-cpulist busy-reply-threshold client-default-resp
		client-output-buffer-limit client-query-buffer-limit cluster-allow-pubsubshard-when-down
		cluster-allow-reads-when-down cluster-allow-replica-migration cluster-announce-bus-port
		cluster-announce-hostname cluster-announce-human-nodename cluster-announce-ip
		cluster-announce-port cluster-announce-tls-port cluster-config-file cluster-enabled
		cluster-link-sendbuf-limit cluster-migration-barrier cluster-node-timeout cluster-ping-interval
		cluster-port cluster-preferred-endpoint-type cluster-replica-no-failover
		cluster-replica-validity-factor cluster-require-full-coverage cluster-slave-no-failover
		cluster-slave-validity-factor crash-log-enabled crash-memcheck-enabled daemonize databases
		dbfilename dir disable-thp dynamic-hz enable-debug-command enable-module-command
		enable-protected-configs hash-max-listpack-entries hash-max-listpack-value
		hash-max-ziplist-entries hash-max-ziplist-value hide-user-data-from-log hll-sparse-max-bytes hz
		ignore-warnings io-threads io-threads-do-reads jemalloc-bg-thread key-load-delay
		latency-monitor-threshold latency-tracking latency-tracking-info-percentiles
		lazyfree-lazy-eviction lazyfree-lazy-expire lazyfree-lazy-server-del lazyfree-lazy-user-del
		lazyfree-lazy-user-flush lfu-decay-time lfu-log-factor list-compress-depth
		list-max-listpack-size list-max-ziplist-size loading-process-events-interval-bytes
		locale-collate logfile loglevel lua-time-limit masterauth masteruser
		max-new-connections-per-cycle max-new-tls-connections-per-cycle maxclients maxmemory
		maxmemory-clients maxmemory-eviction-tenacity maxmemory-policy maxmemory-samples
		min-replicas-max-lag min-replicas-to-write min-slaves-max-lag min-slaves-to-write
		no-appendfsync-on-rewrite notify-keyspace-events oom-score-adj oom-score-adj-values pidfile
		port proc-title-template propagation-error-behavior protected-mode proto-max-bulk-len
		rdb-del-sync-files rdb-key-save-delay rdb-save-incremental-fsync rdbchecksum rdbcompression
		repl-backlog-size repl-backlog-ttl repl-disable-tcp-nodelay repl-diskless-load
		repl-diskless-sync repl-diskless-sync-delay repl-diskless-sync-max-replicas
		repl-ping-replica-period repl-ping-slave-period repl-timeout replica-announce-ip
		replica-announce-port replica-announced replica-ignore-disk-write-errors
		replica-ignore-maxmemory replica-lazy-flush replica-priority replica-read-only
		replica-serve-stale-data replicaof req-res-logfile requirepass sanitize-dump-payload save
		server-cpulist set-max-intset-entries set-max-listpack-entries set-max-listpack-value
		set-proc-title shutdown-on-sigint shutdown-on-sigterm shutdown-timeout slave-announce-ip
		slave-announce-port slave-ignore-maxmemory slave-lazy-flush slave-priority slave-read-only
		slave-serve-stale-data slaveof slowlog-log-slower-than slowlog-max-len socket-mark-id
		stop-writes-on-bgsave-error stream-node-max-bytes stream-node-max-entries supervised
		syslog-enabled syslog-facility syslog-ident tcp-backlog tcp-keepalive timeout tls-auth-clients
		tls-ca-cert-dir tls-ca-cert-file tls-cert-file tls-ciphers tls-ciphersuites
		tls-client-cert-file tls-client-key-file tls-client-key-file-pass tls-cluster
		tls-dh-params-file tls-key-file tls-key-file-pass tls-port tls-prefer-server-ciphers
		tls-protocols tls-replication tls-session-cache-size tls-session-cache-timeout
		tls-session-caching tracking-table-max-keys unixsocket unixsocketperm use-exit-on-panic
		watchdog-period zset-max-listpack-entries zset-max-listpack-value zset-max-ziplist-entries
		zset-max-ziplist-value include rename-command loadmodule sentinel`) {
		m[n] = true
	}
	return m
}()
