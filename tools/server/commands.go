package server

import (
	"fmt"
	"math"
	"strconv"
	"strings"
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

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }
