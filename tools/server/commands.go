package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ohbloom/ohbloom"
	"github.com/tidwall/match"
)

// replier is the part of a RESP connection a command writes its reply to;
// redcon.Conn and redcon.Writer both have it.
type replier interface {
	WriteError(msg string)
	WriteString(str string)
	WriteBulk(bulk []byte)
	WriteBulkString(bulk string)
	WriteInt64(num int64)
	WriteArray(count int)
	WriteNull()
}

// command is one entry of the command table.
type command struct {
	// arity is Redis's: n means exactly n arguments including the name,
	// -n at least n.
	arity int
	// noAuth commands run before AUTH: AUTH itself, HELLO (which may carry
	// AUTH) and QUIT.
	noAuth bool
	run    func(s *Server, sess *session, w replier, args [][]byte)
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"ping":     {-1, false, cmdPing},
		"echo":     {2, false, func(_ *Server, _ *session, w replier, a [][]byte) { w.WriteBulk(a[1]) }},
		"quit":     {-1, true, cmdQuit},
		"auth":     {-2, true, cmdAuth},
		"hello":    {-1, true, cmdHello},
		"select":   {2, false, cmdSelect},
		"client":   {-2, false, cmdClient},
		"command":  {-1, false, cmdCommand},
		"config":   {-2, false, cmdConfig},
		"info":     {-1, false, cmdInfo},
		"dbsize":   {1, false, func(s *Server, _ *session, w replier, _ [][]byte) { w.WriteInt64(int64(s.store.len())) }},
		"del":      {-2, false, cmdDel},
		"unlink":   {-2, false, cmdDel},
		"exists":   {-2, false, cmdExists},
		"type":     {2, false, cmdType},
		"keys":     {2, false, cmdKeys},
		"scan":     {-2, false, cmdScan},
		"flushall": {-1, false, cmdFlush},
		"flushdb":  {-1, false, cmdFlush},
		"save":     {1, false, cmdSave},
		"bgsave":   {-1, false, cmdBgsave},
		"lastsave": {1, false, func(s *Server, _ *session, w replier, _ [][]byte) { w.WriteInt64(s.store.lastSave.Load()) }},

		"bf.reserve":   {-4, false, cmdBFReserve},
		"bf.add":       {3, false, cmdBFAdd},
		"bf.madd":      {-3, false, cmdBFAdd},
		"bf.insert":    {-4, false, cmdBFInsert},
		"bf.exists":    {3, false, cmdBFExists},
		"bf.mexists":   {-3, false, cmdBFExists},
		"bf.info":      {-2, false, cmdBFInfo},
		"bf.card":      {2, false, cmdBFCard},
		"bf.scandump":  {3, false, cmdScanDump},
		"bf.loadchunk": {4, false, cmdLoadChunk},

		"cf.reserve":   {-3, false, cmdCFReserve},
		"cf.add":       {3, false, cmdCFAdd},
		"cf.addnx":     {3, false, cmdCFAdd},
		"cf.insert":    {-4, false, cmdCFInsert},
		"cf.insertnx":  {-4, false, cmdCFInsert},
		"cf.exists":    {3, false, cmdCFExists},
		"cf.mexists":   {-3, false, cmdCFExists},
		"cf.count":     {3, false, cmdCFExists},
		"cf.del":       {3, false, cmdCFDel},
		"cf.info":      {2, false, cmdCFInfo},
		"cf.scandump":  {3, false, cmdScanDump},
		"cf.loadchunk": {4, false, cmdLoadChunk},
	}
}

// RedisBloom's defaults for keys created by an add.
const (
	defaultErrorRate    = 0.01
	defaultBFCapacity   = 100
	defaultCFCapacity   = 1000
	defaultExpansion    = 2
	countingErrorRate   = 0.01 // a CF key's rate: RedisBloom's cuckoo filters have about 1-3%
	wrongType           = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNotFound         = "ERR not found"
	errItemExists       = "ERR item exists"
	errNonScalingIsFull = "ERR non scaling filter is full"
)

var errKeyTooLong = fmt.Sprintf("ERR key longer than %d bytes", maxKeyBytes)

// exec runs one command. It never panics on any input: every argument is
// checked before use, and a bug in a command is caught and answered as an
// error so that one bad request cannot take the other clients' filters down.
func (s *Server) exec(sess *session, w replier, args [][]byte) {
	if len(args) == 0 {
		w.WriteError("ERR empty command")
		return
	}
	defer func() {
		if r := recover(); r != nil {
			s.cfg.Logger.Error("command panicked", "command", string(args[0]), "panic", r)
			w.WriteError(fmt.Sprintf("ERR internal error in '%s'", lowerName(args[0])))
		}
	}()
	c, ok := lookup(args[0])
	if !ok {
		w.WriteError(unknownCommand(args))
		return
	}
	if !sess.authed && !c.noAuth {
		w.WriteError("NOAUTH Authentication required.")
		return
	}
	if (c.arity > 0 && len(args) != c.arity) || (c.arity < 0 && len(args) < -c.arity) {
		w.WriteError(wrongArity(args[0]))
		return
	}
	c.run(s, sess, w, args)
}

// lookup finds a command by name in any case, without allocating: the
// name is lowered into a stack buffer, and a map index by string(bytes)
// does not copy.
func lookup(name []byte) (command, bool) {
	var buf [16]byte // longer than any command's name
	if len(name) > len(buf) {
		return command{}, false
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	c, ok := commands[string(buf[:len(name)])]
	return c, ok
}

// wrongArity is Redis's reply to a command given the wrong number of
// arguments.
func wrongArity(name []byte) string {
	return fmt.Sprintf("ERR wrong number of arguments for '%s' command", lowerName(name))
}

// unknownArgument is the reply to an option the command does not take.
func unknownArgument(arg []byte) string {
	return fmt.Sprintf("ERR unknown argument '%s'", quoteArg(arg))
}

// lowerName is a command's name for messages.
func lowerName(b []byte) string {
	if len(b) > 64 {
		b = b[:64]
	}
	return strings.ToLower(string(b))
}

func unknownCommand(args [][]byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ERR unknown command '%s', with args beginning with: ", quoteArg(args[0]))
	for _, a := range args[1:min(len(args), 4)] {
		fmt.Fprintf(&b, "'%s' ", quoteArg(a))
	}
	return b.String()
}

// quoteArg makes an argument printable inside an error line, which may hold
// no CR or LF.
func quoteArg(b []byte) string {
	if len(b) > 128 {
		b = b[:128]
	}
	q := strconv.Quote(string(b))
	return q[1 : len(q)-1]
}

func eq(b []byte, word string) bool { return strings.EqualFold(string(b), word) }

// parseInt parses a Redis integer argument.
func parseInt(b []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// parseRate parses a Redis float argument; NaN and infinities are refused
// as Redis refuses them.
func parseRate(b []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// ---- connection and keyspace commands

func cmdPing(_ *Server, _ *session, w replier, args [][]byte) {
	switch len(args) {
	case 1:
		w.WriteString("PONG")
	case 2:
		w.WriteBulk(args[1])
	default:
		w.WriteError(wrongArity(args[0]))
	}
}

func cmdQuit(_ *Server, sess *session, w replier, _ [][]byte) {
	w.WriteString("OK")
	sess.quit = true
}

func (s *Server) checkPassword(user, pass []byte) bool {
	return s.cfg.Password != "" && (user == nil || string(user) == "default") && string(pass) == s.cfg.Password
}

const errWrongPass = "WRONGPASS invalid username-password pair or user is disabled."

func cmdAuth(s *Server, sess *session, w replier, args [][]byte) {
	if len(args) > 3 {
		w.WriteError("ERR syntax error")
		return
	}
	if s.cfg.Password == "" {
		w.WriteError("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	var user []byte
	if len(args) == 3 {
		user = args[1]
	}
	if !s.checkPassword(user, args[len(args)-1]) {
		w.WriteError(errWrongPass)
		return
	}
	sess.authed = true
	w.WriteString("OK")
}

// cmdHello speaks RESP2 only: HELLO 3 is refused with NOPROTO, on which
// clients (go-redis, redis-py, Jedis) fall back to RESP2 and AUTH.
func cmdHello(s *Server, sess *session, w replier, args [][]byte) {
	if len(args) > 1 {
		v, ok := parseInt(args[1])
		if !ok {
			w.WriteError("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 {
			w.WriteError("NOPROTO sorry, this protocol version is not supported")
			return
		}
	}
	authed := sess.authed
	name := sess.name
	for i := 2; i < len(args); i++ {
		switch {
		case eq(args[i], "AUTH") && i+2 < len(args):
			if !s.checkPassword(args[i+1], args[i+2]) {
				w.WriteError(errWrongPass)
				return
			}
			authed = true
			i += 2
		case eq(args[i], "SETNAME") && i+1 < len(args):
			name = string(args[i+1])
			i++
		default:
			w.WriteError(fmt.Sprintf("ERR Syntax error in HELLO option '%s'", quoteArg(args[i])))
			return
		}
	}
	if !authed {
		w.WriteError("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	sess.authed, sess.name = true, name
	w.WriteArray(14)
	w.WriteBulkString("server")
	w.WriteBulkString("ohbloom")
	w.WriteBulkString("version")
	w.WriteBulkString(Version)
	w.WriteBulkString("proto")
	w.WriteInt64(2)
	w.WriteBulkString("id")
	w.WriteInt64(0)
	w.WriteBulkString("mode")
	w.WriteBulkString("standalone")
	w.WriteBulkString("role")
	w.WriteBulkString("master")
	w.WriteBulkString("modules")
	w.WriteArray(0)
}

// Version is what HELLO and INFO report as the server's version.
const Version = "7.0.0-ohbloom"

func cmdSelect(_ *Server, _ *session, w replier, args [][]byte) {
	if n, ok := parseInt(args[1]); !ok || n != 0 {
		w.WriteError("ERR DB index is out of range")
		return
	}
	w.WriteString("OK")
}

func cmdClient(_ *Server, sess *session, w replier, args [][]byte) {
	switch {
	case eq(args[1], "SETNAME") && len(args) == 3:
		sess.name = string(args[2])
		w.WriteString("OK")
	case eq(args[1], "GETNAME") && len(args) == 2:
		if sess.name == "" {
			w.WriteNull()
		} else {
			w.WriteBulkString(sess.name)
		}
	case eq(args[1], "SETINFO") && len(args) == 4:
		w.WriteString("OK")
	case eq(args[1], "ID") && len(args) == 2:
		w.WriteInt64(0)
	default:
		w.WriteError(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try CLIENT HELP.", quoteArg(args[1])))
	}
}

// cmdCommand answers COMMAND's introspection with empty lists: clients use
// it for hints only.
func cmdCommand(_ *Server, _ *session, w replier, args [][]byte) {
	if len(args) > 1 && eq(args[1], "COUNT") {
		w.WriteInt64(int64(len(commands)))
		return
	}
	w.WriteArray(0)
}

// cmdConfig answers CONFIG GET with the few settings benchmark and
// monitoring tools ask for; CONFIG SET is refused, the server's settings
// being its flags.
func cmdConfig(s *Server, _ *session, w replier, args [][]byte) {
	if !eq(args[1], "GET") || len(args) != 3 {
		w.WriteError("ERR ohbloom serve supports CONFIG GET <parameter> only; settings are command-line flags")
		return
	}
	settings := map[string]string{
		"save":               "",
		"appendonly":         "no",
		"maxclients":         strconv.Itoa(s.cfg.MaxClients),
		"proto-max-bulk-len": strconv.FormatInt(s.cfg.MaxRequestBytes, 10),
		"dir":                s.cfg.DataDir,
	}
	pattern := strings.ToLower(string(args[2]))
	var names []string
	for name := range settings {
		if match.Match(name, pattern) {
			names = append(names, name)
		}
	}
	w.WriteArray(2 * len(names))
	for _, name := range names {
		w.WriteBulkString(name)
		w.WriteBulkString(settings[name])
	}
}

func cmdInfo(s *Server, _ *session, w replier, _ [][]byte) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Server\r\nredis_version:%s\r\nredis_mode:standalone\r\nuptime_in_seconds:%d\r\n",
		Version, int64(time.Since(s.started).Seconds()))
	fmt.Fprintf(&b, "# Clients\r\nconnected_clients:%d\r\nmaxclients:%d\r\n", s.clients.Load(), s.cfg.MaxClients)
	var bytes uint64
	for _, name := range s.store.names() {
		if e := s.store.get(name); e != nil {
			bytes += e.sizeBytes()
		}
	}
	fmt.Fprintf(&b, "# Memory\r\nused_memory_filters:%d\r\n", bytes)
	fmt.Fprintf(&b, "# Persistence\r\nrdb_last_save_time:%d\r\n", s.store.lastSave.Load())
	fmt.Fprintf(&b, "# Keyspace\r\n")
	if n := s.store.len(); n > 0 {
		fmt.Fprintf(&b, "db0:keys=%d,expires=0,avg_ttl=0\r\n", n)
	}
	w.WriteBulkString(b.String())
}

func cmdDel(s *Server, _ *session, w replier, args [][]byte) {
	names := make([]string, len(args)-1)
	for i, a := range args[1:] {
		names[i] = string(a)
	}
	n, err := s.store.del(names...)
	if err != nil {
		s.cfg.Logger.Error("removing data files", "err", err)
	}
	w.WriteInt64(int64(n))
}

func cmdExists(s *Server, _ *session, w replier, args [][]byte) {
	n := 0
	for _, a := range args[1:] {
		if s.store.getBytes(a) != nil {
			n++
		}
	}
	w.WriteInt64(int64(n))
}

func cmdType(s *Server, _ *session, w replier, args [][]byte) {
	if e := s.store.getBytes(args[1]); e != nil {
		w.WriteString(e.kind.typeName())
		return
	}
	w.WriteString("none")
}

func cmdKeys(s *Server, _ *session, w replier, args [][]byte) {
	var out []string
	for _, name := range s.store.names() {
		if match.Match(name, string(args[1])) {
			out = append(out, name)
		}
	}
	w.WriteArray(len(out))
	for _, name := range out {
		w.WriteBulkString(name)
	}
}

// cmdScan walks the sorted keys; the cursor is the position of the next
// one. Keys added or deleted during a scan may be missed or seen twice, as
// Redis allows.
func cmdScan(s *Server, _ *session, w replier, args [][]byte) {
	cursor, ok := parseInt(args[1])
	if !ok || cursor < 0 {
		w.WriteError("ERR invalid cursor")
		return
	}
	pattern, count, typ := "*", int64(10), ""
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			w.WriteError("ERR syntax error")
			return
		}
		switch {
		case eq(args[i], "MATCH"):
			pattern = string(args[i+1])
		case eq(args[i], "COUNT"):
			if count, ok = parseInt(args[i+1]); !ok || count < 1 {
				w.WriteError("ERR value is out of range, must be positive")
				return
			}
		case eq(args[i], "TYPE"):
			typ = string(args[i+1])
		default:
			w.WriteError("ERR syntax error")
			return
		}
	}
	names := s.store.names()
	var out []string
	next := int64(0)
	for i := cursor; i < int64(len(names)); i++ {
		if i-cursor >= count {
			next = i
			break
		}
		name := names[i]
		e := s.store.get(name)
		if e == nil || !match.Match(name, pattern) || (typ != "" && !strings.EqualFold(typ, e.kind.typeName())) {
			continue
		}
		out = append(out, name)
	}
	w.WriteArray(2)
	w.WriteBulkString(strconv.FormatInt(next, 10))
	w.WriteArray(len(out))
	for _, name := range out {
		w.WriteBulkString(name)
	}
}

func cmdFlush(s *Server, _ *session, w replier, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !eq(args[1], "SYNC") && !eq(args[1], "ASYNC")) {
		w.WriteError("ERR syntax error")
		return
	}
	if _, err := s.store.del(s.store.names()...); err != nil {
		s.cfg.Logger.Error("removing data files", "err", err)
	}
	w.WriteString("OK")
}

func cmdSave(s *Server, _ *session, w replier, _ [][]byte) {
	if s.cfg.DataDir == "" {
		w.WriteError("ERR no data directory: start the server with --dir to save")
		return
	}
	if err := s.store.save(false); err != nil {
		w.WriteError("ERR " + oneLine(err.Error()))
		return
	}
	w.WriteString("OK")
}

func cmdBgsave(s *Server, _ *session, w replier, _ [][]byte) {
	if s.cfg.DataDir == "" {
		w.WriteError("ERR no data directory: start the server with --dir to save")
		return
	}
	go func() {
		if err := s.store.save(false); err != nil {
			s.cfg.Logger.Error("BGSAVE", "err", err)
		}
	}()
	w.WriteString("Background saving started")
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// ---- BF.*

// bloomOptions are what BF.RESERVE and BF.INSERT create a key with.
type bloomOptions struct {
	errorRate  float64
	capacity   int64
	expansion  int64
	nonScaling bool
}

// newBloom builds a BF key's filter, refusing what ohbloom cannot do as
// asked rather than doing something else: any growth but 2, and filters
// beyond the size limit.
func (s *Server) newBloom(o bloomOptions) (*entry, error) {
	if err := o.valid(); err != nil {
		return nil, err
	}
	if !o.nonScaling && o.expansion != defaultExpansion {
		return nil, fmt.Errorf("ERR ohbloom's scalable filters grow by %d: EXPANSION %d is not supported", defaultExpansion, o.expansion)
	}
	if err := s.checkSize(uint64(o.capacity), o.errorRate, ohbloom.Size); err != nil {
		return nil, err
	}
	c := ohbloom.Config{Capacity: uint64(o.capacity), FPR: o.errorRate}
	e := &entry{capacity: uint64(o.capacity), errorRate: o.errorRate}
	var err error
	if o.nonScaling {
		e.kind = kindFixed
		e.fixed, err = ohbloom.NewAtomicWithConfig(c)
	} else {
		e.kind = kindScalable
		e.scalable, err = ohbloom.NewAtomicScalableWithConfig(c)
	}
	if err != nil {
		return nil, errors.New("ERR " + oneLine(err.Error()))
	}
	return e, nil
}

func (s *Server) checkSize(n uint64, p float64, size func(uint64, float64) (uint64, int, error)) error {
	blocks, _, err := size(n, p)
	if err != nil {
		return errors.New("ERR " + oneLine(err.Error()))
	}
	if bytes := blocks * ohbloom.BlockBytes; bytes > s.cfg.MaxFilterBytes {
		return fmt.Errorf("ERR filter of %d bytes exceeds max-filter-bytes (%d)", bytes, s.cfg.MaxFilterBytes)
	}
	return nil
}

func cmdBFReserve(s *Server, _ *session, w replier, args [][]byte) {
	if len(args) > 7 {
		w.WriteError(wrongArity(args[0]))
		return
	}
	o := bloomOptions{expansion: defaultExpansion}
	var ok bool
	if o.errorRate, ok = parseRate(args[2]); !ok {
		w.WriteError("ERR bad error rate")
		return
	}
	if o.capacity, ok = parseInt(args[3]); !ok {
		w.WriteError("ERR bad capacity")
		return
	}
	for i := 4; i < len(args); i++ {
		switch {
		case eq(args[i], "NONSCALING"):
			o.nonScaling = true
		case eq(args[i], "EXPANSION"):
			if i+1 == len(args) {
				w.WriteError("ERR no expansion")
				return
			}
			i++
			if o.expansion, ok = parseInt(args[i]); !ok {
				w.WriteError("ERR bad expansion")
				return
			}
		default:
			w.WriteError(unknownArgument(args[i]))
			return
		}
	}
	s.reserve(w, args[1], false, func() (*entry, error) { return s.newBloom(o) })
}

// bloomEntry returns the BF key name, creating it with o when create is
// set; it writes the error reply and returns nil when there is none.
func (s *Server) bloomEntry(w replier, name []byte, create bool, o bloomOptions) *entry {
	if !create {
		e := s.store.get(string(name))
		switch {
		case e == nil:
			w.WriteError(errNotFound)
			return nil
		case e.kind == kindCounting:
			w.WriteError(wrongType)
			return nil
		}
		return e
	}
	e := s.store.getBytes(name) // no copy of the key unless it is created
	if e == nil {
		if len(name) > maxKeyBytes {
			w.WriteError(errKeyTooLong)
			return nil
		}
		var err error
		e, _, err = s.store.getOrCreate(string(name), func() (*entry, error) { return s.newBloom(o) })
		if err != nil {
			w.WriteError(err.Error())
			return nil
		}
	}
	if e.kind == kindCounting {
		w.WriteError(wrongType)
		return nil
	}
	return e
}

// bloomAdd adds one item and returns 1 if it was new, 0 if the filter
// already reported it, or an error reply.
func (s *Server) bloomAdd(e *entry, item []byte) (int64, string) {
	switch e.kind {
	case kindFixed:
		h := e.fixed.Hash(item)
		if e.fixed.TestHash(h) {
			return 0, ""
		}
		// Reserve a place below the capacity before adding, so that
		// concurrent clients cannot overfill the filter between them.
		for {
			n := e.items.Load()
			if n >= e.capacity {
				return 0, errNonScalingIsFull
			}
			if e.items.CompareAndSwap(n, n+1) {
				break
			}
		}
		if e.fixed.TestAndAddHash(h) {
			e.items.Add(^uint64(0)) // another client added it first
			return 0, ""
		}
		e.markDirty()
		return 1, ""
	default:
		if e.scalable.SizeBytes() > s.cfg.MaxFilterBytes && !e.scalable.Test(item) {
			return 0, fmt.Sprintf("ERR filter reached max-filter-bytes (%d) and cannot grow", s.cfg.MaxFilterBytes)
		}
		if e.scalable.TestAndAdd(item) {
			return 0, ""
		}
		e.items.Add(1)
		e.markDirty()
		return 1, ""
	}
}

func cmdBFAdd(s *Server, _ *session, w replier, args [][]byte) {
	o := bloomOptions{errorRate: defaultErrorRate, capacity: defaultBFCapacity, expansion: defaultExpansion}
	e := s.bloomEntry(w, args[1], true, o)
	if e == nil {
		return
	}
	multi := eq(args[0], "bf.madd")
	s.addItems(e, w, args[2:], multi)
}

func (s *Server) addItems(e *entry, w replier, items [][]byte, multi bool) {
	if multi {
		w.WriteArray(len(items))
	}
	for _, item := range items {
		n, errMsg := s.bloomAdd(e, item)
		if errMsg != "" {
			w.WriteError(errMsg)
		} else {
			w.WriteInt64(n)
		}
	}
}

func cmdBFInsert(s *Server, _ *session, w replier, args [][]byte) {
	o := bloomOptions{errorRate: defaultErrorRate, capacity: defaultBFCapacity, expansion: defaultExpansion}
	create, items := true, -1
	var ok bool
	for i := 2; i < len(args) && items < 0; i++ {
		switch {
		case eq(args[i], "ITEMS"):
			items = i + 1
		case eq(args[i], "NOCREATE"):
			create = false
		case eq(args[i], "NONSCALING"):
			o.nonScaling = true
		case eq(args[i], "CAPACITY") || eq(args[i], "ERROR") || eq(args[i], "EXPANSION"):
			if i+1 == len(args) {
				w.WriteError(wrongArity(args[0]))
				return
			}
			switch i++; {
			case eq(args[i-1], "CAPACITY"):
				if o.capacity, ok = parseInt(args[i]); !ok {
					w.WriteError("ERR bad capacity")
					return
				}
			case eq(args[i-1], "ERROR"):
				if o.errorRate, ok = parseRate(args[i]); !ok {
					w.WriteError("ERR bad error rate")
					return
				}
			default:
				if o.expansion, ok = parseInt(args[i]); !ok {
					w.WriteError("ERR bad expansion")
					return
				}
			}
		default:
			w.WriteError(unknownArgument(args[i]))
			return
		}
	}
	if items < 0 || items == len(args) {
		w.WriteError(wrongArity(args[0]))
		return
	}
	if create {
		// Options are checked even when the key exists, as RedisBloom does.
		if err := o.valid(); err != nil {
			w.WriteError(err.Error())
			return
		}
	}
	e := s.bloomEntry(w, args[1], create, o)
	if e == nil {
		return
	}
	s.addItems(e, w, args[items:], true)
}

// valid checks the options with RedisBloom's messages, before any filter
// is built.
func (o bloomOptions) valid() error {
	switch {
	case o.errorRate <= 0 || o.errorRate >= 1:
		return errors.New("ERR (0 < error rate range < 1)")
	case o.capacity < 1:
		return errors.New("ERR (capacity should be larger than 0)")
	case o.expansion < 1:
		return errors.New("ERR expansion should be greater or equal to 1")
	}
	return nil
}

func (e *entry) bloomTest(item []byte) bool {
	if e.kind == kindFixed {
		return e.fixed.Test(item)
	}
	return e.scalable.Test(item)
}

func cmdBFExists(s *Server, _ *session, w replier, args [][]byte) {
	e := s.store.getBytes(args[1])
	if e != nil && e.kind == kindCounting {
		w.WriteError(wrongType)
		return
	}
	multi := eq(args[0], "bf.mexists")
	if multi {
		w.WriteArray(len(args) - 2)
	}
	for _, item := range args[2:] {
		if e != nil && e.bloomTest(item) {
			w.WriteInt64(1)
		} else {
			w.WriteInt64(0)
		}
	}
}

func cmdBFCard(s *Server, _ *session, w replier, args [][]byte) {
	e := s.store.getBytes(args[1])
	switch {
	case e == nil:
		w.WriteInt64(0)
	case e.kind == kindCounting:
		w.WriteError(wrongType)
	default:
		w.WriteInt64(int64(e.items.Load()))
	}
}

func cmdBFInfo(s *Server, _ *session, w replier, args [][]byte) {
	if len(args) > 3 {
		w.WriteError(wrongArity(args[0]))
		return
	}
	e := s.bloomEntry(w, args[1], false, bloomOptions{})
	if e == nil {
		return
	}
	fields := []struct {
		name, arg string
		value     func()
	}{
		{"Capacity", "CAPACITY", func() { w.WriteInt64(int64(e.capacityNow())) }},
		{"Size", "SIZE", func() { w.WriteInt64(int64(e.sizeBytes())) }},
		{"Number of filters", "FILTERS", func() { w.WriteInt64(int64(e.stages())) }},
		{"Number of items inserted", "ITEMS", func() { w.WriteInt64(int64(e.items.Load())) }},
		{"Expansion rate", "EXPANSION", func() {
			if e.kind == kindFixed {
				w.WriteNull()
			} else {
				w.WriteInt64(defaultExpansion)
			}
		}},
	}
	if len(args) == 3 {
		for _, f := range fields {
			if eq(args[2], f.arg) {
				w.WriteArray(1)
				f.value()
				return
			}
		}
		w.WriteError("ERR Invalid information value")
		return
	}
	w.WriteArray(2 * len(fields))
	for _, f := range fields {
		w.WriteString(f.name)
		f.value()
	}
}

// ---- CF.*: counting filters

func (s *Server) newCounting(capacity int64) (*entry, error) {
	if capacity < 1 {
		return nil, errors.New("ERR (capacity should be larger than 0)")
	}
	if err := s.checkSize(uint64(capacity), countingErrorRate, countingSize); err != nil {
		return nil, err
	}
	f, err := ohbloom.NewAtomicCountingWithConfig(ohbloom.Config{Capacity: uint64(capacity), FPR: countingErrorRate})
	if err != nil {
		return nil, errors.New("ERR " + oneLine(err.Error()))
	}
	return &entry{kind: kindCounting, counting: f, capacity: uint64(capacity), errorRate: countingErrorRate}, nil
}

// countingSize sizes a counting filter without allocating one.
func countingSize(n uint64, p float64) (uint64, int, error) { return ohbloom.CountingSize(n, p) }

func cmdCFReserve(s *Server, _ *session, w replier, args [][]byte) {
	capacity, ok := parseInt(args[2])
	if !ok {
		w.WriteError("ERR Bad capacity")
		return
	}
	for i := 3; i < len(args); i += 2 {
		if i+1 == len(args) {
			w.WriteError(wrongArity(args[0]))
			return
		}
		v, ok := parseInt(args[i+1])
		switch {
		case eq(args[i], "BUCKETSIZE") || eq(args[i], "MAXITERATIONS") || eq(args[i], "EXPANSION"):
			// Cuckoo-filter tuning: a counting filter has no buckets
			// to size and never relocates; the values are checked and
			// otherwise have no effect.
			if !ok || v < 0 {
				w.WriteError(fmt.Sprintf("ERR Couldn't parse %s", strings.ToUpper(string(args[i]))))
				return
			}
		default:
			w.WriteError(unknownArgument(args[i]))
			return
		}
	}
	s.reserve(w, args[1], true, func() (*entry, error) { return s.newCounting(capacity) })
}

// reserve creates the key with build and answers BF.RESERVE or CF.RESERVE:
// OK, or RedisBloom's error for a key that exists, of either type.
func (s *Server) reserve(w replier, name []byte, counting bool, build func() (*entry, error)) {
	if len(name) > maxKeyBytes {
		w.WriteError(errKeyTooLong)
		return
	}
	e, created, err := s.store.getOrCreate(string(name), build)
	switch {
	case err != nil:
		w.WriteError(err.Error())
	case !created && (e.kind == kindCounting) != counting:
		w.WriteError(wrongType)
	case !created:
		w.WriteError(errItemExists)
	default:
		w.WriteString("OK")
	}
}

func (s *Server) countingEntry(w replier, name []byte, create bool, capacity int64) *entry {
	e := s.store.getBytes(name)
	if e == nil && create {
		if len(name) > maxKeyBytes {
			w.WriteError(errKeyTooLong)
			return nil
		}
		var err error
		e, _, err = s.store.getOrCreate(string(name), func() (*entry, error) { return s.newCounting(capacity) })
		if err != nil {
			w.WriteError(err.Error())
			return nil
		}
	} else if e == nil {
		w.WriteError(errNotFound)
		return nil
	}
	if e.kind != kindCounting {
		w.WriteError(wrongType)
		return nil
	}
	return e
}

// countingAdd adds item (only if absent with nx) and returns 1 if it was
// added.
func countingAdd(e *entry, item []byte, nx bool) int64 {
	if nx && e.counting.Test(item) {
		return 0
	}
	e.counting.Add(item)
	e.items.Add(1)
	e.markDirty()
	return 1
}

func cmdCFAdd(s *Server, _ *session, w replier, args [][]byte) {
	e := s.countingEntry(w, args[1], true, defaultCFCapacity)
	if e == nil {
		return
	}
	w.WriteInt64(countingAdd(e, args[2], eq(args[0], "cf.addnx")))
}

func cmdCFInsert(s *Server, _ *session, w replier, args [][]byte) {
	capacity, create, items := int64(defaultCFCapacity), true, -1
	for i := 2; i < len(args) && items < 0; i++ {
		switch {
		case eq(args[i], "ITEMS"):
			items = i + 1
		case eq(args[i], "NOCREATE"):
			create = false
		case eq(args[i], "CAPACITY"):
			if i+1 == len(args) {
				w.WriteError(wrongArity(args[0]))
				return
			}
			i++
			var ok bool
			if capacity, ok = parseInt(args[i]); !ok || capacity < 1 {
				w.WriteError("ERR Bad capacity")
				return
			}
		default:
			w.WriteError(unknownArgument(args[i]))
			return
		}
	}
	if items < 0 || items == len(args) {
		w.WriteError(wrongArity(args[0]))
		return
	}
	e := s.countingEntry(w, args[1], create, capacity)
	if e == nil {
		return
	}
	nx := eq(args[0], "cf.insertnx")
	w.WriteArray(len(args) - items)
	for _, item := range args[items:] {
		w.WriteInt64(countingAdd(e, item, nx))
	}
}

func cmdCFExists(s *Server, _ *session, w replier, args [][]byte) {
	e := s.store.getBytes(args[1])
	if e != nil && e.kind != kindCounting {
		w.WriteError(wrongType)
		return
	}
	multi, count := eq(args[0], "cf.mexists"), eq(args[0], "cf.count")
	if multi {
		w.WriteArray(len(args) - 2)
	}
	for _, item := range args[2:] {
		switch {
		case e == nil:
			w.WriteInt64(0)
		case count:
			w.WriteInt64(int64(e.counting.Count(item)))
		case e.counting.Test(item):
			w.WriteInt64(1)
		default:
			w.WriteInt64(0)
		}
	}
}

func cmdCFDel(s *Server, _ *session, w replier, args [][]byte) {
	e := s.countingEntry(w, args[1], false, 0)
	if e == nil {
		return
	}
	if err := e.counting.Remove(args[2]); err != nil {
		w.WriteInt64(0)
		return
	}
	e.items.Add(^uint64(0))
	e.deletes.Add(1)
	e.markDirty()
	w.WriteInt64(1)
}

func cmdCFInfo(s *Server, _ *session, w replier, args [][]byte) {
	e := s.countingEntry(w, args[1], false, 0)
	if e == nil {
		return
	}
	info := []struct {
		name  string
		value uint64
	}{
		{"Size", e.sizeBytes()},
		{"Number of buckets", e.counting.Blocks()},
		{"Number of filters", 1},
		{"Number of items inserted", e.items.Load()},
		{"Number of items deleted", e.deletes.Load()},
		{"Bucket size", e.counting.Counters() / e.counting.Blocks()},
		{"Expansion rate", 0},
		{"Max iterations", 0},
	}
	w.WriteArray(2 * len(info))
	for _, f := range info {
		w.WriteString(f.name)
		w.WriteInt64(int64(f.value))
	}
}

// scanDumpChunk is the most SCANDUMP returns at once, RedisBloom's 10 MiB
// (a variable so that tests can see many chunks without large filters).
var scanDumpChunk uint64 = 10 << 20

// ---- SCANDUMP and LOADCHUNK
//
// A dump is the key's record (the data file's bytes) behind an 8-byte
// length, served in chunks of at most 10 MiB. The iterator of a chunk is
// one past the offset of its end, so LOADCHUNK knows where each chunk goes
// and that the first one starts the upload. The record is taken whole at
// iterator 0, so adds during a dump do not tear it.

type pendingLoad struct {
	kinds string // "bf" or "cf": the family that started it
	total uint64
	buf   []byte
}

// family tells BF.SCANDUMP and BF.LOADCHUNK from their CF twins.
func family(args [][]byte) string {
	if eq(args[0][:2], "cf") {
		return "cf"
	}
	return "bf"
}

func cmdScanDump(s *Server, _ *session, w replier, args [][]byte) {
	iter, ok := parseInt(args[2])
	if !ok || iter < 0 {
		w.WriteError("ERR Second argument must be numeric")
		return
	}
	name := string(args[1])
	e := s.store.get(name)
	if e == nil {
		w.WriteError(errNotFound)
		return
	}
	if (e.kind == kindCounting) != (family(args) == "cf") {
		w.WriteError(wrongType)
		return
	}
	e.dumpMu.Lock()
	defer e.dumpMu.Unlock()
	if iter == 0 {
		rec := record{name, e}.bytes()
		e.dump = binary.LittleEndian.AppendUint64(make([]byte, 0, 8+len(rec)), uint64(len(rec)))
		e.dump = append(e.dump, rec...)
	}
	start := uint64(max(iter, 1) - 1)
	if e.dump == nil || start >= uint64(len(e.dump)) {
		e.dump = nil
		w.WriteArray(2)
		w.WriteInt64(0)
		w.WriteBulk(nil)
		return
	}
	end := min(start+scanDumpChunk, uint64(len(e.dump)))
	w.WriteArray(2)
	w.WriteInt64(int64(end) + 1)
	w.WriteBulk(e.dump[start:end])
}

func cmdLoadChunk(s *Server, _ *session, w replier, args [][]byte) {
	iter, ok := parseInt(args[2])
	data := args[3]
	if !ok || iter < 1 || uint64(iter-1) < uint64(len(data)) {
		w.WriteError("ERR invalid chunk position")
		return
	}
	name := string(args[1])
	start := uint64(iter-1) - uint64(len(data))
	fam := family(args)
	s.store.pendingMu.Lock()
	defer s.store.pendingMu.Unlock()
	p := s.store.pending[name]
	if start == 0 {
		if s.store.get(name) != nil {
			w.WriteError(errItemExists)
			return
		}
		if len(data) < 8 {
			w.WriteError("ERR invalid dump header")
			return
		}
		total := binary.LittleEndian.Uint64(data)
		if limit := s.cfg.MaxFilterBytes + 2*maxKeyBytes; total > limit {
			w.WriteError(fmt.Sprintf("ERR dump of %d bytes exceeds max-filter-bytes (%d)", total, s.cfg.MaxFilterBytes))
			return
		}
		p = &pendingLoad{kinds: fam, total: total}
		data = data[8:]
		s.store.pending[name] = p
	} else {
		if p == nil || p.kinds != fam {
			w.WriteError("ERR no dump being loaded for this key: start with its first chunk")
			return
		}
		if start != 8+uint64(len(p.buf)) {
			w.WriteError(fmt.Sprintf("ERR chunk starts at byte %d, expected %d", start, 8+len(p.buf)))
			return
		}
	}
	if uint64(len(p.buf))+uint64(len(data)) > p.total {
		delete(s.store.pending, name)
		w.WriteError("ERR chunk runs past the end of the dump")
		return
	}
	p.buf = append(p.buf, data...)
	if uint64(len(p.buf)) < p.total {
		w.WriteString("OK")
		return
	}
	delete(s.store.pending, name)
	r := bytes.NewReader(p.buf)
	_, e, err := readRecord(r) // a dump may be loaded under another key, as in RedisBloom
	switch {
	case err != nil:
		w.WriteError("ERR invalid dump: " + oneLine(err.Error()))
	case r.Len() != 0:
		w.WriteError("ERR invalid dump: bytes after the filter")
	case (e.kind == kindCounting) != (fam == "cf"):
		w.WriteError(wrongType)
	case e.sizeBytes() > s.cfg.MaxFilterBytes:
		w.WriteError(fmt.Sprintf("ERR filter of %d bytes exceeds max-filter-bytes (%d)", e.sizeBytes(), s.cfg.MaxFilterBytes))
	case !s.store.put(name, e):
		w.WriteError(errItemExists)
	default:
		w.WriteString("OK")
	}
}
