package server

import (
	"fmt"
	"os"
	"strings"
	"time"
)

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

const errWrongPass = "WRONGPASS invalid username-password pair or user is disabled."

// cmdAuth is AUTH [user] password, as Redis 7's: the one-argument form
// names the default user, and is an error while that user needs no
// password.
func cmdAuth(s *Server, sess *session, w replier, args [][]byte) {
	if len(args) > 3 {
		w.WriteError("ERR syntax error")
		return
	}
	user := "default"
	if len(args) == 2 {
		if !s.authRequiredByDefault() {
			w.WriteError("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
			return
		}
	} else {
		user = string(args[1])
	}
	if !s.authenticate(sess, user, args[len(args)-1], args[0]) {
		w.WriteError(errWrongPass)
		return
	}
	w.WriteString("OK")
}

// authRequiredByDefault reports whether the default user has passwords
// (Redis: its nopass flag is off).
func (s *Server) authRequiredByDefault() bool { return !s.x.acl.def.state.Load().nopass }

// cmdHello negotiates the protocol: HELLO 3 switches the connection to
// RESP3, HELLO 2 back; HELLO alone answers in the current one. Its AUTH
// authenticates, its SETNAME names the connection, as in Redis 7.
func cmdHello(s *Server, sess *session, w replier, args [][]byte) {
	proto := sess.proto
	if len(args) > 1 {
		v, ok := parseInt(args[1])
		if !ok {
			w.WriteError("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			w.WriteError("NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
	}
	var user, pass []byte
	name, setName := "", false
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case eq(args[i], "AUTH") && more >= 2:
			user, pass = args[i+1], args[i+2]
			i += 2
		case eq(args[i], "SETNAME") && more >= 1:
			if msg := clientNameError(args[i+1]); msg != "" {
				w.WriteError(msg)
				return
			}
			name, setName = string(args[i+1]), true
			i++
		default:
			w.WriteError(fmt.Sprintf("ERR Syntax error in HELLO option '%s'", quoteArg(args[i])))
			return
		}
	}
	if user != nil && !s.authenticate(sess, string(user), pass, args[0]) {
		w.WriteError(errWrongPass)
		return
	}
	if !sess.authed {
		w.WriteError("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName {
		sess.setName(name)
	}
	sess.proto = proto
	if sess.info != nil {
		sess.info.resp.Store(int32(proto))
	}
	if rw, ok := w.(*replyWriter); ok {
		rw.proto = proto
	}
	w.WriteMap(7)
	w.WriteBulkString("server")
	w.WriteBulkString("ohbloom")
	w.WriteBulkString("version")
	w.WriteBulkString(Version)
	w.WriteBulkString("proto")
	w.WriteInt64(int64(proto))
	w.WriteBulkString("id")
	w.WriteInt64(sess.id)
	w.WriteBulkString("mode")
	w.WriteBulkString("standalone")
	w.WriteBulkString("role")
	w.WriteBulkString("master")
	w.WriteBulkString("modules")
	writeModules(w)
}

// The module whose commands the server serves, as Redis with RedisBloom
// 2.8.20 loaded reports it (HELLO, MODULE LIST, INFO modules).
const (
	moduleName    = "bf"
	moduleVersion = 20820
)

// modulePath is the module's path as MODULE LIST shows it: this program,
// which serves its commands.
var modulePath = func() string {
	p, err := os.Executable()
	if err != nil {
		return "ohbloom"
	}
	return p
}()

// writeModules writes the list of modules, maps of name, ver, path and
// args (module.c's addReplyLoadedModules).
func writeModules(w replier) {
	w.WriteArray(1)
	w.WriteMap(4)
	w.WriteBulkString("name")
	w.WriteBulkString(moduleName)
	w.WriteBulkString("ver")
	w.WriteInt64(moduleVersion)
	w.WriteBulkString("path")
	w.WriteBulkString(modulePath)
	w.WriteBulkString("args")
	w.WriteArray(0)
}

const errClientName = "ERR Client names cannot contain spaces, newlines or special characters."

// maxClientNameBytes bounds a connection's name (CLIENT SETNAME, HELLO
// SETNAME), which it keeps for its life outside the request budget.
// Redis has no bound.
const maxClientNameBytes = 4 << 10

var errClientNameTooLong = "ERR client name longer than " + itoa(maxClientNameBytes) + " bytes"

// clientNameError is the reply to an invalid name, or "": Redis's rule,
// printable ASCII without spaces, and maxClientNameBytes.
func clientNameError(b []byte) string {
	if len(b) > maxClientNameBytes {
		return errClientNameTooLong
	}
	if !validClientName(b) {
		return errClientName
	}
	return ""
}

// validClientName is Redis's rule: printable ASCII without spaces.
func validClientName(b []byte) bool {
	for _, c := range b {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

// Version is what HELLO and INFO report as the server's version.
const Version = "7.0.0-ohbloom"

// CLIENT's subcommands (networking.c's clientCommand).

func cmdClientID(_ *Server, sess *session, w replier, _ [][]byte) { w.WriteInt64(sess.id) }

func cmdClientSetname(_ *Server, sess *session, w replier, args [][]byte) {
	if msg := clientNameError(args[2]); msg != "" {
		w.WriteError(msg)
		return
	}
	sess.setName(string(args[2]))
	w.WriteString("OK")
}

func cmdClientGetname(_ *Server, sess *session, w replier, _ [][]byte) {
	if name := sess.name(); name != "" {
		w.WriteBulkString(name)
		return
	}
	w.WriteNull()
}

func (sess *session) name() string {
	if sess.info == nil {
		return ""
	}
	return sess.info.name()
}

func (sess *session) setName(name string) {
	if sess.info != nil {
		sess.info.setName(name)
	}
}

// cmdClientSetinfo is CLIENT SETINFO LIB-NAME|LIB-VER value.
func cmdClientSetinfo(_ *Server, sess *session, w replier, args [][]byte) {
	attr := string(args[2])
	if !eq(args[2], "lib-name") && !eq(args[2], "lib-ver") {
		w.WriteError(fmt.Sprintf("ERR Unrecognized option '%s'", attr))
		return
	}
	if len(args[3]) > maxClientNameBytes {
		w.WriteError("ERR " + attr + " longer than " + itoa(maxClientNameBytes) + " bytes")
		return
	}
	if !validClientName(args[3]) {
		w.WriteError(fmt.Sprintf("ERR %s cannot contain spaces, newlines or special characters.", attr))
		return
	}
	if info := sess.info; info != nil {
		info.mu.Lock()
		if eq(args[2], "lib-name") {
			info.libName = string(args[3])
		} else {
			info.libVer = string(args[3])
		}
		info.mu.Unlock()
	}
	w.WriteString("OK")
}

func cmdClientInfo(s *Server, sess *session, w replier, _ [][]byte) {
	w.WriteVerbatim(s.clientInfoLine(sess) + "\n")
}

// cmdClientList is CLIENT LIST [TYPE type] [ID id ...].
func cmdClientList(s *Server, _ *session, w replier, args [][]byte) {
	var b strings.Builder
	switch {
	case len(args) == 4 && eq(args[2], "TYPE"):
		t := strings.ToLower(string(args[3]))
		if t != "normal" && t != "master" && t != "replica" && t != "slave" && t != "pubsub" {
			w.WriteError(fmt.Sprintf("ERR Unknown client type '%s'", args[3]))
			return
		}
		if t == "normal" {
			s.x.registry.each(func(c *connection) { b.WriteString(s.clientLine(c) + "\n") })
		}
	case len(args) > 3 && eq(args[2], "ID"):
		for _, a := range args[3:] {
			id, ok := parseInt(a)
			if !ok {
				w.WriteError("ERR Invalid client ID")
				return
			}
			if c := s.x.registry.get(id); c != nil {
				b.WriteString(s.clientLine(c) + "\n")
			}
		}
	case len(args) != 2:
		w.WriteError("ERR syntax error")
		return
	default:
		s.x.registry.each(func(c *connection) { b.WriteString(s.clientLine(c) + "\n") })
	}
	w.WriteVerbatim(b.String())
}

// cmdClientKill is CLIENT KILL addr (the old form: OK or an error) or
// CLIENT KILL [ID id] [ADDR addr] [LADDR addr] [USER name] [TYPE type]
// [MAXAGE s] [SKIPME yes|no] (the number killed).
func cmdClientKill(s *Server, sess *session, w replier, args [][]byte) {
	var addr, laddr string
	var user *aclUser
	var id, maxAge int64
	typ := ""
	skipme := true
	switch {
	case len(args) == 3:
		addr, skipme = string(args[2]), false
	case len(args) > 3:
		for i := 2; i < len(args); i += 2 {
			if i+1 >= len(args) {
				w.WriteError("ERR syntax error")
				return
			}
			v := args[i+1]
			switch {
			case eq(args[i], "ID"):
				n, ok := parseInt(v)
				if !ok || n < 1 {
					w.WriteError("ERR client-id should be greater than 0")
					return
				}
				id = n
			case eq(args[i], "MAXAGE"):
				n, ok := parseInt(v)
				if !ok {
					w.WriteError("ERR maxage is not an integer or out of range")
					return
				}
				if n <= 0 {
					w.WriteError("ERR maxage should be greater than 0")
					return
				}
				maxAge = n
			case eq(args[i], "TYPE"):
				typ = strings.ToLower(string(v))
				if typ != "normal" && typ != "master" && typ != "replica" && typ != "slave" && typ != "pubsub" {
					w.WriteError(fmt.Sprintf("ERR Unknown client type '%s'", v))
					return
				}
			case eq(args[i], "ADDR"):
				addr = string(v)
			case eq(args[i], "LADDR"):
				laddr = string(v)
			case eq(args[i], "USER"):
				a := &s.x.acl
				a.mu.Lock()
				user = a.users[string(v)]
				a.mu.Unlock()
				if user == nil {
					w.WriteError(fmt.Sprintf("ERR No such user '%s'", v))
					return
				}
			case eq(args[i], "SKIPME"):
				switch {
				case eq(v, "yes"):
					skipme = true
				case eq(v, "no"):
					skipme = false
				default:
					w.WriteError("ERR syntax error")
					return
				}
			default:
				w.WriteError("ERR syntax error")
				return
			}
		}
	}
	killed, self := 0, false
	now := time.Now()
	s.x.registry.each(func(c *connection) {
		info := c.sess.info
		switch {
		case addr != "" && c.addr != addr,
			laddr != "" && info.laddr != laddr,
			typ != "" && typ != "normal",
			id != 0 && c.sess.id != id,
			user != nil && info.user.Load() != user,
			sess.client == c && skipme,
			maxAge != 0 && int64(now.Sub(info.created).Seconds()) < maxAge:
			return
		}
		if sess.client == c {
			self = true
		} else {
			c.kill()
		}
		killed++
	})
	if len(args) == 3 {
		if killed == 0 {
			w.WriteError("ERR No such client")
		} else {
			w.WriteString("OK")
		}
	} else {
		w.WriteInt64(int64(killed))
	}
	if self {
		// Closed once this reply is sent, as Redis's CLOSE_AFTER_REPLY.
		sess.quit = true
	}
}

func cmdClientNoEvict(_ *Server, sess *session, w replier, args [][]byte) {
	clientOnOff(sess, w, args, clientNoEvict)
}

func cmdClientNoTouch(_ *Server, sess *session, w replier, args [][]byte) {
	clientOnOff(sess, w, args, clientNoTouch)
}

func clientOnOff(sess *session, w replier, args [][]byte, flag uint32) {
	var on bool
	switch {
	case eq(args[2], "on"):
		on = true
	case eq(args[2], "off"):
	default:
		w.WriteError("ERR syntax error")
		return
	}
	if sess.info != nil {
		sess.info.setFlag(flag, on)
	}
	w.WriteString("OK")
}

// clientInfoLine is the session's CLIENT INFO line.
func (s *Server) clientInfoLine(sess *session) string {
	if sess.client == nil {
		return "id=" + itoa(sess.id) + " addr= laddr= fd=-1 name= user=" + sessionUser(sess)
	}
	return s.clientLine(sess.client)
}

func sessionUser(sess *session) string {
	if sess.user == nil {
		return "(superuser)"
	}
	return sess.user.name
}

// clientLine is a connection's CLIENT LIST line (networking.c's
// catClientInfoString): what it is, its flags and its last command.
// Its buffers are reported as one figure, tot-mem; the fields of Redis's
// own buffers are 0.
func (s *Server) clientLine(c *connection) string {
	info := c.sess.info
	now := time.Now()
	flags := ""
	multi := info.multi.Load()
	if multi >= 0 {
		flags += "x"
	}
	f := info.flags.Load()
	if f&clientUnixSocket != 0 {
		flags += "U"
	}
	if f&clientNoEvict != 0 {
		flags += "e"
	}
	if f&clientNoTouch != 0 {
		flags += "T"
	}
	if flags == "" {
		flags = "N"
	}
	cmd := "NULL"
	if id := info.lastCmd.Load(); id > 0 {
		cmd = commandByID[id-1].name
	}
	user := "(superuser)"
	if u := info.user.Load(); u != nil {
		user = u.name
	}
	info.mu.Lock()
	name, libName, libVer := info.cname, info.libName, info.libVer
	info.mu.Unlock()
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=%d sub=0 psub=0 ssub=0 multi=%d watch=0 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=%d events=r cmd=%s user=%s redir=-1 resp=%d lib-name=%s lib-ver=%s",
		c.sess.id, c.addr, info.laddr, c.fdNum(), name, int64(now.Sub(info.created).Seconds()), now.Unix()-info.lastIO.Load(),
		flags, info.db.Load(), multi, info.held.Load(), cmd, user, info.resp.Load(), libName, libVer)
}

// Help texts of the containers (Redis's, for the subcommands served).
var clientHelp = []string{
	"GETNAME",
	"    Return the name of the current connection.",
	"ID",
	"    Return the ID of the current connection.",
	"INFO",
	"    Return information about the current client connection.",
	"KILL <ip:port>",
	"    Kill connection made from <ip:port>.",
	"KILL <option> <value> [<option> <value> [...]]",
	"    Kill connections. Options are:",
	"    * ADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made from the specified address",
	"    * LADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made to specified local address",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Kill connections by type.",
	"    * USER <username>",
	"      Kill connections authenticated by <username>.",
	"    * SKIPME (YES|NO)",
	"      Skip killing current connection (default: yes).",
	"    * ID <client-id>",
	"      Kill connections by client id.",
	"    * MAXAGE <maxage>",
	"      Kill connections older than the specified age.",
	"LIST [options ...]",
	"    Return information about client connections. Options:",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Return clients of specified type.",
	"SETNAME <name>",
	"    Assign the name <name> to the current connection.",
	"SETINFO <option> <value>",
	"    Set client meta attr. Options are:",
	"    * LIB-NAME: the client lib name.",
	"    * LIB-VER: the client lib version.",
	"NO-EVICT (ON|OFF)",
	"    Protect current client connection from eviction.",
	"NO-TOUCH (ON|OFF)",
	"    Will not touch LRU/LFU stats when this mode is on.",
}

// cmdHelp answers a container's HELP as Redis's addReplyHelp: a heading,
// the lines, and HELP's own.
func cmdHelp(lines []string) func(*Server, *session, replier, [][]byte) {
	return func(_ *Server, _ *session, w replier, args [][]byte) {
		w.WriteArray(len(lines) + 3)
		w.WriteString(strings.ToUpper(string(args[0])) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
		for _, l := range lines {
			w.WriteString(l)
		}
		w.WriteString("HELP")
		w.WriteString("    Print this help.")
	}
}

// subcommandSyntaxError is Redis's addReplySubcommandSyntaxError.
func subcommandSyntaxError(w replier, args [][]byte) {
	w.WriteError(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP.",
		args[1][:min(len(args[1]), 128)], strings.ToUpper(string(args[0]))))
}
