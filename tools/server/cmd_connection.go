package server

import (
	"bytes"
	"fmt"
	"strconv"
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
	if !s.checkPassword(sess, user, args[len(args)-1]) {
		w.WriteError(errWrongPass)
		return
	}
	sess.authed = true
	w.WriteString("OK")
}

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
	authed := sess.authed
	name, setName := "", false
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case eq(args[i], "AUTH") && more >= 2:
			if s.cfg.Password == "" {
				// Redis checks against the default user, who has no
				// password here: any password is wrong.
				w.WriteError(errWrongPass)
				return
			}
			if !s.checkPassword(sess, args[i+1], args[i+2]) {
				w.WriteError(errWrongPass)
				return
			}
			authed = true
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
	if !authed {
		w.WriteError("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	sess.authed = true
	if setName {
		sess.name = name
	}
	sess.proto = proto
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
		if msg := clientNameError(args[2]); msg != "" {
			w.WriteError(msg)
			return
		}
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
		w.WriteInt64(sess.id)
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
// being its flags. As in Redis 7, a parameter without *, ? or [ is looked
// up ignoring case and answered under the name given; a pattern matches
// ignoring case, and is at most maxPatternBytes (Redis takes any: a 60 MB
// one took it seconds).
func cmdConfig(s *Server, _ *session, w replier, args [][]byte) {
	if eq(args[1], "SET") && len(args) >= 4 && len(args)%2 == 0 && isTLSSetting(string(args[2])) {
		configSetTLS(s, w, args[2:])
		return
	}
	if !eq(args[1], "GET") || len(args) != 3 {
		w.WriteError("ERR ohbloom serve supports CONFIG GET <parameter> and CONFIG SET of tls-* only; settings are command-line flags")
		return
	}
	settings := append([][2]string{
		{"save", ""},
		{"appendonly", s.appendOnlySetting()},
		{"maxclients", strconv.Itoa(s.cfg.MaxClients)},
		{"proto-max-bulk-len", strconv.Itoa(s.cfg.MaxRequestBytes)},
		{"dir", s.cfg.DataDir},
	}, s.tlsConfigGet()...)
	param := args[2]
	if bytes.IndexAny(param, "[*?") < 0 {
		for _, kv := range settings {
			if len(param) == len(kv[0]) && eq(param, kv[0]) {
				w.WriteMap(1)
				w.WriteBulk(param)
				w.WriteBulkString(kv[1])
				return
			}
		}
		w.WriteMap(0)
		return
	}
	if len(param) > maxPatternBytes {
		w.WriteError(errPatternTooLong)
		return
	}
	g := compileGlob(string(param), true)
	matched := make([]bool, len(settings))
	n := 0
	for i, kv := range settings {
		if matched[i] = g.match(kv[0]); matched[i] {
			n++
		}
	}
	w.WriteMap(n)
	for i, kv := range settings {
		if matched[i] {
			w.WriteBulkString(kv[0])
			w.WriteBulkString(kv[1])
		}
	}
}

func cmdInfo(s *Server, _ *session, w replier, _ [][]byte) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Server\r\nredis_version:%s\r\nredis_mode:standalone\r\nuptime_in_seconds:%d\r\n",
		Version, int64(time.Since(s.started).Seconds()))
	fmt.Fprintf(&b, "# Clients\r\nconnected_clients:%d\r\nmaxclients:%d\r\n", s.clients.Load(), s.cfg.MaxClients)
	fmt.Fprintf(&b, "# Memory\r\nused_memory_filters:%d\r\n", s.store.sizeBytes())
	s.infoPersistence(&b)
	fmt.Fprintf(&b, "# Keyspace\r\n")
	if n := s.store.len(); n > 0 {
		fmt.Fprintf(&b, "db0:keys=%d,expires=0,avg_ttl=0\r\n", n)
	}
	w.WriteVerbatim(b.String())
}
