package server

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// command is one entry of the command table.
type command struct {
	// arity is Redis's: n means exactly n arguments including the name,
	// -n at least n.
	arity int
	// noAuth commands run before AUTH: AUTH itself, HELLO (which may carry
	// AUTH) and QUIT.
	noAuth bool
	run    func(s *Server, sess *session, w replier, args [][]byte)
	// control commands run at once inside MULTI instead of being queued:
	// MULTI, EXEC, DISCARD, WATCH, QUIT.
	control bool
	// slow commands may take long (a save, a scan of the keyspace, a
	// whole filter built, dumped or removed): a connection runs them on a
	// goroutine of their own, so that its event loop serves the other
	// clients meanwhile (conn.go).
	slow bool
	// name is the registered, lower-case name, for messages.
	name string
}

// arityOK reports whether n arguments (the name included) suit c.
func (c command) arityOK(n int) bool {
	return (c.arity > 0 && n == c.arity) || (c.arity < 0 && n >= -c.arity)
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"multi":    {arity: 1, run: cmdMulti, control: true},
		"exec":     {arity: 1, run: cmdExec, control: true},
		"discard":  {arity: 1, run: cmdDiscard, control: true},
		"watch":    {arity: -2, run: cmdWatch, control: true},
		"unwatch":  {arity: 1, run: cmdUnwatch},
		"ping":     {arity: -1, run: cmdPing},
		"echo":     {arity: 2, run: func(_ *Server, _ *session, w replier, a [][]byte) { w.WriteBulk(a[1]) }},
		"quit":     {arity: -1, noAuth: true, run: cmdQuit, control: true},
		"auth":     {arity: -2, noAuth: true, run: cmdAuth},
		"hello":    {arity: -1, noAuth: true, run: cmdHello},
		"select":   {arity: 2, run: cmdSelect},
		"client":   {arity: -2, run: cmdClient},
		"command":  {arity: -1, run: cmdCommand},
		"config":   {arity: -2, slow: true, run: cmdConfig},
		"info":     {arity: -1, slow: true, run: cmdInfo},
		"dbsize":   {arity: 1, run: func(s *Server, _ *session, w replier, _ [][]byte) { w.WriteInt64(int64(s.store.len())) }},
		"del":      {arity: -2, slow: true, run: cmdDel},
		"unlink":   {arity: -2, slow: true, run: cmdDel},
		"exists":   {arity: -2, run: cmdExists},
		"type":     {arity: 2, run: cmdType},
		"keys":     {arity: 2, slow: true, run: cmdKeys},
		"scan":     {arity: -2, slow: true, run: cmdScan},
		"flushall": {arity: -1, slow: true, run: cmdFlush},
		"flushdb":  {arity: -1, slow: true, run: cmdFlush},
		"save":     {arity: 1, slow: true, run: cmdSave},
		"bgsave":   {arity: -1, run: cmdBgsave},
		"dump":     {arity: 2, slow: true, run: cmdDump},
		"restore":  {arity: -4, slow: true, run: cmdRestore},
		"lastsave": {arity: 1, run: func(s *Server, _ *session, w replier, _ [][]byte) { w.WriteInt64(s.store.lastSave.Load()) }},

		"bf.reserve":   {arity: -4, slow: true, run: cmdBFReserve},
		"bf.add":       {arity: 3, run: cmdBFAdd},
		"bf.madd":      {arity: -3, run: cmdBFAdd},
		"bf.insert":    {arity: -4, run: cmdBFInsert},
		"bf.exists":    {arity: 3, run: cmdBFExists},
		"bf.mexists":   {arity: -3, run: cmdBFExists},
		"bf.info":      {arity: -2, run: cmdBFInfo},
		"bf.card":      {arity: 2, run: cmdBFCard},
		"bf.scandump":  {arity: 3, slow: true, run: cmdScanDump},
		"bf.loadchunk": {arity: 4, slow: true, run: cmdLoadChunk},

		"cf.reserve":   {arity: -3, slow: true, run: cmdCFReserve},
		"cf.add":       {arity: 3, run: cmdCFAdd},
		"cf.addnx":     {arity: 3, run: cmdCFAdd},
		"cf.insert":    {arity: -4, run: cmdCFInsert},
		"cf.insertnx":  {arity: -4, run: cmdCFInsert},
		"cf.exists":    {arity: 3, run: cmdCFExists},
		"cf.mexists":   {arity: -3, run: cmdCFExists},
		"cf.count":     {arity: 3, run: cmdCFExists},
		"cf.del":       {arity: 3, run: cmdCFDel},
		"cf.info":      {arity: 2, run: cmdCFInfo},
		"cf.debug":     {arity: 2, run: cmdCFDebug},
		"cf.compact":   {arity: 2, slow: true, run: cmdCFCompact},
		"cf.scandump":  {arity: 3, slow: true, run: cmdScanDump},
		"cf.loadchunk": {arity: 4, slow: true, run: cmdLoadChunk},
	}
	for name, c := range commands {
		c.name = name
		commands[name] = c
	}
}

// RedisBloom's defaults for keys created by an add.
const (
	defaultErrorRate    = 0.01
	defaultBFCapacity   = 100
	defaultExpansion    = 2
	countingErrorRate   = 0.01 // the rate of a legacy CF key (cmd_cf_legacy.go)
	wrongType           = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNotFound         = "ERR not found"
	errItemExists       = "ERR item exists"
	errNonScalingIsFull = "ERR non scaling filter is full"
)

var errKeyTooLong = fmt.Sprintf("ERR key longer than %d bytes", maxKeyBytes)

// exec runs one command, or queues it inside MULTI. It never panics on
// any input: every argument is checked before use, and a bug in a
// command is caught and answered as an error so that one bad request
// cannot take the other clients' filters down.
func (s *Server) exec(sess *session, w replier, args [][]byte) {
	if len(args) == 0 {
		w.WriteError("ERR empty command")
		return
	}
	c, ok := lookup(args[0])
	s.execCommand(sess, w, args, c, ok)
}

// execCommand is exec of a command already looked up: c, ok are
// lookup(args[0]).
func (s *Server) execCommand(sess *session, w replier, args [][]byte, c command, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			s.logPanic.log(s.cfg.Logger, "command panicked", "command", lowerName(args[0]), "panic", r)
			w.WriteError(fmt.Sprintf("ERR internal error in '%s'", lowerName(args[0])))
		}
	}()
	if sess.multi != nil && !(ok && c.control) && sess.authed {
		s.queue(sess, w, c, ok, args)
		return
	}
	if !ok {
		w.WriteError(unknownCommand(args))
		return
	}
	// Redis's order: existence, arity, then authentication.
	if !c.arityOK(len(args)) {
		w.WriteError(wrongArity(c.name))
		return
	}
	if !sess.authed && !c.noAuth {
		w.WriteError("NOAUTH Authentication required.")
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
// arguments; name is the command's registered name (commands that check
// their own arity further pass their arguments' first, which lookup
// matched in any case, lowered).
func wrongArity[T string | []byte](name T) string {
	return "ERR wrong number of arguments for '" + lowerName([]byte(name)) + "' command"
}

// lowerName is a command's name for messages.
func lowerName(b []byte) string {
	if len(b) > 64 {
		b = b[:64]
	}
	return strings.ToLower(string(b))
}

// unknownCommand is Redis 7's reply to a command it does not know: the
// name (up to 128 bytes), then the arguments quoted while the list is
// shorter than 128 bytes, each cut to what is left of those.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.Write(args[0][:min(len(args[0]), 128)])
	b.WriteString("', with args beginning with: ")
	listed := 0
	for _, a := range args[1:] {
		if listed >= 128 {
			break
		}
		a = a[:min(len(a), 128-listed)]
		b.WriteByte('\'')
		b.Write(a)
		b.WriteString("' ")
		listed += len(a) + 3
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

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// reserve creates the key with build and answers BF.RESERVE or CF.RESERVE
// (cf): OK, or RedisBloom's error for a key that exists, of either type.
func (s *Server) reserve(sess *session, w replier, name []byte, cf bool, build func() (*entry, error)) {
	if len(name) > maxKeyBytes {
		w.WriteError(errKeyTooLong)
		return
	}
	if msg := s.store.writeRefusal(); msg != "" {
		w.WriteError(msg)
		return
	}
	e, created, pos, err := s.store.getOrCreateLogged(string(name), build)
	if err == nil {
		err = s.commit(sess, pos)
		if err != nil {
			err = errors.New(logFailed(err))
		}
	}
	switch {
	case err != nil:
		w.WriteError(err.Error())
	case !created && e.kind.isCF() != cf:
		w.WriteError(wrongType)
	case !created:
		w.WriteError(errItemExists)
	default:
		w.WriteString("OK")
	}
}
