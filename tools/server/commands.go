package server

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// command is one entry of the command table.
type command struct {
	// arity is Redis's: n means exactly n arguments including the name,
	// -n at least n. A subcommand's is its metadata's.
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
	// name is the registered, lower-case name, for messages: a
	// subcommand's is its full name, "config|get".
	name string

	// Set at start (initCommands).
	// meta is what COMMAND reports and ACL rules check.
	meta *cmdMeta
	// lookup is how its lookups of its keys count (keyLookups).
	lookup uint8
	// id numbers the commands and subcommands served, for their
	// statistics and users' permissions.
	id int
	// subs are a container's subcommands, by lower-case name (CONFIG GET
	// is "get" under "config"); a container runs its own run only when
	// called alone (COMMAND).
	subs map[string]command
}

// arityOK reports whether n arguments (the name included) suit c.
func (c command) arityOK(n int) bool {
	return (c.arity > 0 && n == c.arity) || (c.arity < 0 && n >= -c.arity)
}

var commands map[string]command

// subcommands are the containers' subcommands served: their arity and
// flags are Redis's (commands_redis.go).
var subcommands map[string]map[string]command

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
		"select":   {arity: 2, run: cmdSelectDB},
		"client":   {arity: -2},
		"command":  {arity: -1, slow: true, run: cmdCommand},
		"config":   {arity: -2},
		"acl":      {arity: -2},
		"object":   {arity: -2},
		"memory":   {arity: -2},
		"slowlog":  {arity: -2},
		"latency":  {arity: -2},
		"module":   {arity: -2},
		"info":     {arity: -1, slow: true, run: cmdInfo},
		"time":     {arity: 1, run: cmdTime},
		"role":     {arity: 1, run: cmdRole},
		"dbsize":   {arity: 1, run: func(s *Server, sess *session, w replier, _ [][]byte) { w.WriteInt64(int64(s.store.len(sess.db))) }},
		"del":      {arity: -2, slow: true, run: cmdDel},
		"unlink":   {arity: -2, slow: true, run: cmdDel},
		"exists":   {arity: -2, run: cmdExists},
		"type":     {arity: 2, run: cmdType},
		"keys":     {arity: 2, slow: true, run: cmdKeys},
		"scan":     {arity: -2, slow: true, run: cmdScan},
		"flushall": {arity: -1, slow: true, run: cmdFlush},
		"flushdb":  {arity: -1, slow: true, run: cmdFlush},
		"save":     {arity: 1, slow: true, run: cmdSave},

		"expire":      {arity: -3, run: cmdExpire},
		"pexpire":     {arity: -3, run: cmdExpire},
		"expireat":    {arity: -3, run: cmdExpire},
		"pexpireat":   {arity: -3, run: cmdExpire},
		"ttl":         {arity: 2, run: cmdTTL},
		"pttl":        {arity: 2, run: cmdTTL},
		"expiretime":  {arity: 2, run: cmdTTL},
		"pexpiretime": {arity: 2, run: cmdTTL},
		"persist":     {arity: 2, run: cmdPersist},
		"rename":      {arity: 3, slow: true, run: cmdRename},
		"renamenx":    {arity: 3, slow: true, run: cmdRename},
		"copy":        {arity: -3, slow: true, run: cmdCopy},
		"move":        {arity: 3, slow: true, run: cmdMove},
		"swapdb":      {arity: 3, slow: true, run: cmdSwapDB},

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
	subcommands = map[string]map[string]command{
		"client": {
			"id": {run: cmdClientID}, "getname": {run: cmdClientGetname}, "setname": {run: cmdClientSetname},
			"setinfo": {run: cmdClientSetinfo}, "info": {run: cmdClientInfo}, "list": {slow: true, run: cmdClientList},
			"kill": {run: cmdClientKill}, "no-evict": {run: cmdClientNoEvict}, "no-touch": {run: cmdClientNoTouch},
			"help": {run: cmdHelp(clientHelp)},
		},
		"config": {
			"get": {run: cmdConfigGet}, "set": {slow: true, run: cmdConfigSet}, "resetstat": {run: cmdConfigResetstat},
			"rewrite": {slow: true, run: cmdConfigRewrite}, "help": {run: cmdHelp(configHelp)},
		},
		"command": {
			"count": {run: cmdCommandCount}, "info": {slow: true, run: cmdCommandInfo}, "docs": {slow: true, run: cmdCommandDocs},
			"getkeys": {run: cmdCommandGetkeys}, "getkeysandflags": {run: cmdCommandGetkeys}, "list": {slow: true, run: cmdCommandList},
			"help": {run: cmdHelp(commandHelp)},
		},
		"acl": {
			"setuser": {slow: true, run: cmdACLSetuser}, "getuser": {slow: true, run: cmdACLGetuser}, "deluser": {slow: true, run: cmdACLDeluser},
			"list": {slow: true, run: cmdACLList}, "users": {run: cmdACLUsers}, "whoami": {run: cmdACLWhoami}, "cat": {run: cmdACLCat},
			"log": {run: cmdACLLog}, "save": {slow: true, run: cmdACLSave}, "load": {slow: true, run: cmdACLLoad},
			"genpass": {run: cmdACLGenpass}, "dryrun": {slow: true, run: cmdACLDryrun}, "help": {run: cmdHelp(aclHelp)},
		},
		"object": {
			"encoding": {run: cmdObjectEncoding}, "freq": {run: cmdObjectFreq}, "idletime": {run: cmdObjectIdletime},
			"refcount": {run: cmdObjectRefcount}, "help": {run: cmdHelp(objectHelp)},
		},
		"memory": {
			"usage": {run: cmdMemoryUsage}, "stats": {slow: true, run: cmdMemoryStats}, "doctor": {slow: true, run: cmdMemoryDoctor},
			"purge": {slow: true, run: cmdMemoryPurge}, "help": {run: cmdHelp(memoryHelp)},
		},
		"slowlog": {
			"get": {slow: true, run: cmdSlowlogGet}, "len": {run: cmdSlowlogLen}, "reset": {run: cmdSlowlogReset}, "help": {run: cmdHelp(slowlogHelp)},
		},
		"latency": {
			"latest": {run: cmdLatencyLatest}, "history": {run: cmdLatencyHistory}, "reset": {run: cmdLatencyReset},
			"doctor": {run: cmdLatencyDoctor}, "help": {run: cmdHelp(latencyHelp)},
		},
		"module": {"list": {run: cmdModuleList}, "help": {run: cmdHelp(moduleHelp)}},
	}
	initCommands()
}

// initCommands gives every command served its metadata (Redis's for
// Redis's commands, RedisBloom's for the BF and CF ones), its
// subcommands and its number.
func initCommands() {
	initMeta(redisCommands)
	for _, m := range metaByName {
		if m.module == "" {
			m.acl = implicitCategories(m.flags, m.acl)
		}
	}
	for _, m := range moduleCommands {
		metaByName[m.name] = m
		m.legacyRange()
	}
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	slices.Sort(names)
	id := 0
	for _, name := range names {
		c := commands[name]
		c.name = name
		c.meta = metaByName[name]
		if c.meta == nil {
			panic("server: no metadata for command " + name)
		}
		c.noAuth = c.noAuth || c.meta.flags&cmdNoAuth != 0
		c.lookup = keyLookups[name]
		c.id = id
		id++
		subNames := make([]string, 0, len(subcommands[name]))
		for sub := range subcommands[name] {
			subNames = append(subNames, sub)
		}
		slices.Sort(subNames)
		if len(subNames) > 0 {
			c.subs = map[string]command{}
		}
		for _, sub := range subNames {
			sc := subcommands[name][sub]
			sc.name = name + "|" + sub
			sc.meta = metaByName[sc.name]
			if sc.meta == nil {
				panic("server: no metadata for subcommand " + sc.name)
			}
			sc.arity = sc.meta.arity
			sc.noAuth = sc.meta.flags&cmdNoAuth != 0
			sc.lookup = keyLookups[sc.name]
			sc.id = id
			id++
			c.subs[sub] = sc
		}
		commands[name] = c
	}
	commandCount = id
	commandByID = make([]command, id)
	for _, c := range commands {
		commandByID[c.id] = c
		for _, sc := range c.subs {
			commandByID[sc.id] = sc
		}
	}
}

// commandCount is the number of commands and subcommands served;
// commandByID finds one by its id.
var (
	commandCount int
	commandByID  []command
)

// resolve finds the subcommand a container's arguments name. msg is the
// error for an unknown one (Redis's: the container's name upper-cased),
// empty when c is not a container or is called alone.
func (c command) resolve(args [][]byte) (command, string) {
	if c.subs == nil || len(args) < 2 {
		return c, ""
	}
	if sub, ok := lookupIn(c.subs, args[1]); ok {
		return sub, ""
	}
	return c, fmt.Sprintf("ERR unknown subcommand '%s'. Try %s HELP.", args[1][:min(len(args[1]), 128)], strings.ToUpper(c.name))
}

// isSlow reports whether the command args name runs off the event loop.
func (c command) isSlow(args [][]byte) bool {
	if c.subs != nil && len(args) >= 2 {
		if sub, ok := lookupIn(c.subs, args[1]); ok {
			return sub.slow
		}
	}
	return c.slow
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
// lookup(args[0]). It checks as Redis's processCommand does, in its
// order: the command exists (its subcommand too), its arity, the
// client's authentication, its user's permissions, the memory limit; a
// command refused by any is answered its error and not run.
func (s *Server) execCommand(sess *session, w replier, args [][]byte, c command, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			s.logPanic.log(s.cfg.Logger, "command panicked", "command", lowerName(args[0]), "panic", r)
			w.WriteError(fmt.Sprintf("ERR internal error in '%s'", lowerName(args[0])))
		}
	}()
	if rw, isRW := w.(*replyWriter); isRW {
		sess.prevErrs = rw.errs
	}
	if sess.multi != nil && !(ok && c.control) && sess.authed {
		if ok && c.arityOK(len(args)) {
			// Queued commands are checked as any, and a refusal aborts
			// the EXEC.
			sub, msg := c.resolve(args)
			switch {
			case msg != "":
				w.WriteError(msg)
			case !sub.arityOK(len(args)):
				w.WriteError(wrongArity(sub.name))
				s.rejected(sess, w, &sub)
			case sub.meta.flags&cmdNoMulti != 0:
				w.WriteError("ERR Command not allowed inside a transaction")
				s.rejected(sess, w, &sub)
			case s.admit(sess, w, &sub, args):
				s.queue(sess, w, c, ok, args)
				if info := sess.info; info != nil && sess.multi != nil {
					info.multi.Store(int32(len(sess.multi.cmds)))
				}
				return
			}
			sess.multi.dirty = true
			return
		}
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
		s.rejected(sess, w, &c)
		return
	}
	if c.subs != nil {
		var msg string
		if c, msg = c.resolve(args); msg != "" {
			w.WriteError(msg)
			return
		}
		if !c.arityOK(len(args)) {
			w.WriteError(wrongArity(c.name))
			s.rejected(sess, w, &c)
			return
		}
	}
	if !sess.authed && !c.noAuth {
		w.WriteError("NOAUTH Authentication required.")
		s.rejected(sess, w, &c)
		return
	}
	if !s.admit(sess, w, &c, args) {
		return
	}
	s.call(sess, w, &c, args)
}

// errOOM is Redis's refusal of a command that may add memory past
// maxmemory.
const errOOM = "OOM command not allowed when used memory > 'maxmemory'."

// admit checks what Redis checks once a command is known and its client
// authenticated: the user's permissions, then the memory limit for a
// command that may add memory (an EXEC for its queue's). A refusal is
// answered, logged and counted.
func (s *Server) admit(sess *session, w replier, c *command, args [][]byte) bool {
	if !s.checkACL(sess, w, c, args) {
		s.rejected(sess, w, c)
		return false
	}
	// A transaction's commands were checked for memory when queued, and
	// the EXEC for all of them.
	if s.x.live.maxMemory.Load() > 0 && !sess.inExec {
		deny := c.meta.flags&cmdDenyOOM != 0
		if c.name == "exec" && sess.multi != nil && !sess.multi.dirty {
			deny = s.queueMayAddMemory(sess.multi)
		}
		if deny && s.overMaxMemory() {
			if c.name == "exec" {
				// Redis aborts the transaction (multi.c's execCommandAbort).
				sess.multi = nil
				if sess.info != nil {
					sess.info.multi.Store(-1)
				}
				w.WriteError("EXECABORT Transaction discarded because of: " + errOOM)
			} else {
				w.WriteError(errOOM)
			}
			s.rejected(sess, w, c)
			return false
		}
	}
	return true
}

// queueMayAddMemory reports whether a queued command may add memory.
func (s *Server) queueMayAddMemory(m *multiState) bool {
	deny := false
	m.each(func(args [][]byte) {
		if c, ok := lookup(args[0]); ok {
			if sub, msg := c.resolve(args); msg == "" && sub.meta.flags&cmdDenyOOM != 0 {
				deny = true
			}
		}
	})
	return deny
}

// lookup finds a command by name in any case, without allocating: the
// name is lowered into a stack buffer, and a map index by string(bytes)
// does not copy.
func lookup(name []byte) (command, bool) { return lookupIn(commands, name) }

func lookupIn(table map[string]command, name []byte) (command, bool) {
	var buf [24]byte // longer than any command's name
	if len(name) > len(buf) {
		return command{}, false
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	c, ok := table[string(buf[:len(name)])]
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
	e, created, pos, err := s.store.getOrCreateLogged(sess.db, string(name), build)
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
