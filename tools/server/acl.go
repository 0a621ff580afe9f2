package server

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Users and what they may do: Redis 7's ACL (acl.c), for the commands
// served here.
//
// A user has passwords (kept as SHA-256, as Redis keeps them), is on or
// off, and has selectors: the root one and any in parentheses. A
// selector allows commands (by bit, per command and subcommand served,
// set by +cmd, +@category, allcommands) and keys (by glob patterns, for
// reading, writing or both). A command runs if one selector allows it
// and every key it names. The rules are kept as typed, in order, so that
// ACL LIST shows them back as Redis does.
//
// Where users live: with --aclfile, in that file, Redis's syntax, read at
// start and by ACL LOAD, written by ACL SAVE, as Redis. Without it, in
// the data directory (ohbloom-users.acl, the same syntax), written
// crash-safely after every change (ACL SETUSER, ACL DELUSER, CONFIG SET
// requirepass), so that users survive a restart as the keys do; without
// a data directory, in memory only. --requirepass sets the default
// user's password at start, as Redis's requirepass.
//
// A connection's user is a pointer to its aclUser, whose state is
// replaced whole, atomically, by a change: a command checks the state it
// loads, and a change applies to every connection of the user at its
// next command, as in Redis.

// usersFile is the users' file in the data directory.
const usersFile = "ohbloom-users.acl"

// ACL check results, in Redis's order of relevance.
const (
	aclOK = iota
	aclDeniedCmd
	aclDeniedKey
	aclDeniedChannel
	aclDeniedAuth
)

// Key permissions of a pattern.
const (
	keyPermRead  uint8 = 1
	keyPermWrite uint8 = 2
	keyPermAll         = keyPermRead | keyPermWrite
)

type acl struct {
	mu    sync.Mutex // orders changes
	users map[string]*aclUser
	def   *aclUser // "default", never removed
	// file is --aclfile; dirFile the users' file in the data directory.
	file, dirFile string
	// authRequired: the default user has passwords or is off, so a new
	// connection must authenticate.
	authRequired atomic.Bool
	log          aclLog
}

type aclUser struct {
	name  string
	state atomic.Pointer[userState]
}

// userState is a user's settings; never changed once published.
type userState struct {
	enabled, nopass, skipSanitize bool
	passwords                     []string // hex SHA-256, in the order added
	selectors                     []*selector
	// unrestricted: the root selector allows every command and key, so
	// no check is needed (the default user's state).
	unrestricted bool
	// keyWork is the matcher's work per byte of a key for every key
	// pattern of every selector (globPattern.work, see aclCheckHeavy).
	keyWork uint64
}

type selector struct {
	root                              bool
	allKeys, allChannels, allCommands bool
	// future: +@all or allcommands was the last word on all commands, so
	// commands added later are allowed (Redis's reserved bit).
	future    bool
	allowed   []uint64            // bit per command id
	firstArgs map[int][]string    // first arguments allowed of a command otherwise denied
	patterns  []keyPattern        // key patterns
	channels  []string            // channel patterns (no command served uses channels)
	rules     string              // the command rules, as ACL LIST shows them after +@all or -@all
	extra     map[string]struct{} // rules naming Redis commands not served, kept for display only
}

type keyPattern struct {
	perm uint8
	glob globPattern // its text is the pattern
}

func newSelector(root bool) *selector {
	return &selector{root: root, allowed: make([]uint64, (commandCount+63)/64)}
}

func (sel *selector) clone() *selector {
	c := *sel
	c.allowed = slices.Clone(sel.allowed)
	c.patterns = slices.Clone(sel.patterns)
	c.channels = slices.Clone(sel.channels)
	if sel.firstArgs != nil {
		c.firstArgs = map[int][]string{}
		for k, v := range sel.firstArgs {
			c.firstArgs[k] = slices.Clone(v)
		}
	}
	return &c
}

func (st *userState) clone() *userState {
	c := *st
	c.passwords = slices.Clone(st.passwords)
	c.selectors = make([]*selector, len(st.selectors))
	for i, sel := range st.selectors {
		c.selectors[i] = sel.clone()
	}
	return &c
}

// newUserState is a user as ACL SETUSER creates it: off, no password, no
// command, no key, no channel.
func newUserState() *userState {
	return &userState{selectors: []*selector{newSelector(true)}}
}

func (sel *selector) has(id int) bool { return sel.allowed[id/64]>>(id%64)&1 != 0 }

func (sel *selector) set(id int, allow bool) {
	if allow {
		sel.allowed[id/64] |= 1 << (id % 64)
	} else {
		sel.allowed[id/64] &^= 1 << (id % 64)
		sel.allCommands = false
	}
}

// changePerm allows or denies a command, and a container's subcommands
// with it (acl.c's ACLChangeSelectorPerm).
func (sel *selector) changePerm(c command, allow bool) {
	sel.set(c.id, allow)
	delete(sel.firstArgs, c.id)
	for _, sc := range c.subs {
		sel.set(sc.id, allow)
	}
}

// updateRules records a command or category rule, dropping an earlier
// rule of the same name and, for a command, of its subcommands
// (ACLUpdateCommandRules).
func (sel *selector) updateRules(rule string, allow bool) {
	rule = strings.ToLower(rule)
	var kept []string
	for _, r := range strings.Fields(sel.rules) {
		name := r[1:]
		if name == rule || strings.HasPrefix(name, rule+"|") {
			continue
		}
		kept = append(kept, r)
	}
	sign := "-"
	if allow {
		sign = "+"
	}
	sel.rules = strings.Join(append(kept, sign+rule), " ")
}

// served looks a command or subcommand up by full name ("config|get").
func served(name string) (command, bool) {
	top, sub, isSub := strings.Cut(strings.ToLower(name), "|")
	c, ok := commands[top]
	if !ok || !isSub {
		return c, ok
	}
	sc, ok := c.subs[sub]
	return sc, ok
}

// Errors of a rule (acl.c's ACLSetUserStringError).
var (
	errACLUnknown   = errors.New("Unknown command or category name in ACL")
	errACLSyntax    = errors.New("Syntax error")
	errACLKeyAfter  = errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	errACLChanAfter = errors.New("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
	errACLNoPass    = errors.New("The password you are trying to remove from the user does not exist")
	errACLBadHash   = errors.New("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	errACLFirstArg  = errors.New("Allowing first-arg of a subcommand is not supported")
	errACLTooMany   = fmt.Errorf("a user holds at most %d passwords, key patterns, channel patterns, selectors and allowed first arguments of each kind", maxUserItems)
)

// maxUserItems bounds each list a user holds, and maxUsers the users:
// rules come from the network (ACL SETUSER) and from files, and a few
// bytes of a rule would otherwise hold a hundred of memory each, without
// end. Redis has no bound.
const (
	maxUserItems = 1024
	maxUsers     = 1 << 16
)

// apply applies one selector rule (acl.c's ACLSetSelector).
func (sel *selector) apply(op string) error {
	switch {
	case strings.EqualFold(op, "allkeys") || op == "~*":
		sel.allKeys, sel.patterns = true, nil
	case strings.EqualFold(op, "resetkeys"):
		sel.allKeys, sel.patterns = false, nil
	case strings.EqualFold(op, "allchannels") || op == "&*":
		sel.allChannels, sel.channels = true, nil
	case strings.EqualFold(op, "resetchannels"):
		sel.allChannels, sel.channels = false, nil
	case strings.EqualFold(op, "allcommands") || strings.EqualFold(op, "+@all"):
		for i := range sel.allowed {
			sel.allowed[i] = ^uint64(0)
		}
		sel.allCommands, sel.future, sel.rules, sel.firstArgs, sel.extra = true, true, "", nil, nil
	case strings.EqualFold(op, "nocommands") || strings.EqualFold(op, "-@all"):
		clear(sel.allowed)
		sel.allCommands, sel.future, sel.rules, sel.firstArgs, sel.extra = false, false, "", nil, nil
	case op != "" && (op[0] == '~' || op[0] == '%'):
		if sel.allKeys {
			return errACLKeyAfter
		}
		perm, off := keyPermAll, 1
		if op[0] == '%' {
			perm = 0
			for ; off < len(op); off++ {
				switch c := op[off]; {
				case (c == 'R' || c == 'r') && perm&keyPermRead == 0:
					perm |= keyPermRead
				case (c == 'W' || c == 'w') && perm&keyPermWrite == 0:
					perm |= keyPermWrite
				case c == '~' && perm != 0:
					off++
					goto done
				default:
					return errACLSyntax
				}
			}
			return errACLSyntax
		done:
		}
		pat := op[off:]
		if hasSpaces(pat) {
			return errACLSyntax
		}
		for i := range sel.patterns {
			if sel.patterns[i].glob.text == pat {
				sel.patterns[i].perm |= perm
				return nil
			}
		}
		if len(sel.patterns) >= maxUserItems {
			return errACLTooMany
		}
		sel.patterns = append(sel.patterns, keyPattern{perm: perm, glob: *compileGlob(pat, false)})
	case op != "" && op[0] == '&':
		if sel.allChannels {
			return errACLChanAfter
		}
		if hasSpaces(op[1:]) {
			return errACLSyntax
		}
		if !slices.Contains(sel.channels, op[1:]) {
			if len(sel.channels) >= maxUserItems {
				return errACLTooMany
			}
			sel.channels = append(sel.channels, op[1:])
		}
	case len(op) > 1 && (op[0] == '+' || op[0] == '-') && op[1] == '@':
		cat := aclCategory(op[2:])
		if cat == 0 {
			return errACLUnknown
		}
		sel.updateRules(op[1:], op[0] == '+')
		sel.setCategory(cat, op[0] == '+')
	case len(op) > 1 && op[0] == '+':
		name := op[1:]
		if !strings.Contains(name, "|") {
			c, ok := served(name)
			if !ok {
				return sel.unservedRule(name, true)
			}
			sel.changePerm(c, true)
			sel.updateRules(c.name, true)
			return nil
		}
		i := strings.LastIndexByte(name, '|')
		parent, sub := name[:i], name[i+1:]
		pm := metaByName[strings.ToLower(parent)]
		if pm == nil {
			return errACLUnknown
		}
		if pm.parent != nil {
			return errACLFirstArg
		}
		if sub == "" {
			return errACLSyntax
		}
		if len(pm.subs) > 0 {
			if metaByName[strings.ToLower(name)] == nil {
				return errACLUnknown
			}
			if c, ok := served(name); ok {
				sel.changePerm(c, true)
			}
		} else if c, ok := served(parent); ok {
			// +select|0: a first argument of an otherwise denied command
			// (deprecated in Redis, still accepted).
			if sel.firstArgs == nil {
				sel.firstArgs = map[int][]string{}
			}
			if !slices.ContainsFunc(sel.firstArgs[c.id], func(a string) bool { return strings.EqualFold(a, sub) }) {
				if len(sel.firstArgs[c.id]) >= maxUserItems {
					return errACLTooMany
				}
				sel.firstArgs[c.id] = append(sel.firstArgs[c.id], sub)
			}
		}
		sel.updateRules(name, true)
	case len(op) > 1 && op[0] == '-':
		name := op[1:]
		c, ok := served(name)
		if !ok {
			return sel.unservedRule(name, false)
		}
		sel.changePerm(c, false)
		sel.updateRules(c.name, false)
	default:
		return errACLSyntax
	}
	return nil
}

// unservedRule takes a rule on a Redis command this server does not
// serve (+get, -debug): valid in Redis, so ACL files written for it load
// here, kept for display, and of no effect.
func (sel *selector) unservedRule(name string, allow bool) error {
	m := metaByName[strings.ToLower(name)]
	if m == nil {
		return errACLUnknown
	}
	if !allow {
		sel.allCommands = false
	}
	sel.updateRules(m.name, allow)
	return nil
}

// setCategory allows or denies every command of a category, and the
// subcommands of a container in it.
func (sel *selector) setCategory(cat uint64, allow bool) {
	for _, c := range commands {
		if c.meta.acl&cat != 0 {
			sel.changePerm(c, allow)
		}
		for _, sc := range c.subs {
			if sc.meta.acl&cat != 0 {
				sel.set(sc.id, allow)
			}
		}
	}
}

func hasSpaces(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r == 0 || r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
	})
}

// apply applies one user rule (acl.c's ACLSetUser).
func (st *userState) apply(op string) error {
	switch {
	case op == "":
	case strings.EqualFold(op, "on"):
		st.enabled = true
	case strings.EqualFold(op, "off"):
		st.enabled = false
	case strings.EqualFold(op, "skip-sanitize-payload"):
		st.skipSanitize = true
	case strings.EqualFold(op, "sanitize-payload"):
		st.skipSanitize = false
	case strings.EqualFold(op, "nopass"):
		st.nopass, st.passwords = true, nil
	case strings.EqualFold(op, "resetpass"):
		st.nopass, st.passwords = false, nil
	case op[0] == '>' || op[0] == '#':
		h := op[1:]
		if op[0] == '>' {
			h = hashPassword([]byte(op[1:]))
		} else if !validHash(h) {
			return errACLBadHash
		}
		if !slices.Contains(st.passwords, h) {
			if len(st.passwords) >= maxUserItems {
				return errACLTooMany
			}
			st.passwords = append(st.passwords, h)
		}
		st.nopass = false
	case op[0] == '<' || op[0] == '!':
		h := op[1:]
		if op[0] == '<' {
			h = hashPassword([]byte(op[1:]))
		} else if !validHash(h) {
			return errACLBadHash
		}
		i := slices.Index(st.passwords, h)
		if i < 0 {
			return errACLNoPass
		}
		st.passwords = slices.Delete(st.passwords, i, i+1)
	case op[0] == '(' && op[len(op)-1] == ')':
		if len(st.selectors) > maxUserItems {
			return errACLTooMany
		}
		sel := newSelector(false)
		for _, o := range splitArgs(op[1 : len(op)-1]) {
			// A word ending in ')' would end the selector early when the
			// user is read back from the users' file: refused.
			if strings.HasSuffix(o, ")") {
				return errACLSyntax
			}
			if err := sel.apply(o); err != nil {
				return err
			}
		}
		st.selectors = append(st.selectors, sel)
	case strings.EqualFold(op, "clearselectors"):
		st.selectors = st.selectors[:1]
	case strings.EqualFold(op, "reset"):
		st.nopass, st.passwords, st.enabled, st.skipSanitize = false, nil, false, false
		st.selectors = []*selector{newSelector(true)}
	default:
		return st.selectors[0].apply(op)
	}
	return nil
}

// finish computes what the checks read.
func (st *userState) finish() *userState {
	r := st.selectors[0]
	st.unrestricted = r.allCommands && r.allKeys
	st.keyWork = 0
	for _, sel := range st.selectors {
		for i := range sel.patterns {
			st.keyWork += sel.patterns[i].glob.work()
		}
	}
	return st
}

// maxLoopMatchWords bounds the work of checking a command's keys against
// its user's key patterns on an event loop, in steps of the matcher (a
// word of its state, or a byte of its table): about as long as a command
// of maxLoopBytes takes.
const maxLoopMatchWords = 1 << 21

// aclCheckHeavy reports whether checking the command args, cmd (size
// bytes on the wire, 0: count them), against the key patterns of the session's user
// may take longer than a loop may run, so that it runs off the loop: a
// user may hold 1,024 patterns in each of 1,024 selectors, and a key of
// 64 KiB checked against 1,024 patterns of 1 KiB held the loop a second.
func (sess *session) aclCheckHeavy(cmd command, args [][]byte, size int) bool {
	if sess.user == nil {
		return false
	}
	st := sess.user.state.Load()
	if st.unrestricted || st.keyWork == 0 {
		return false
	}
	if sub, msg := cmd.resolve(args); msg != "" || !sub.meta.hasKeys() {
		return false
	}
	if size == 0 {
		for _, a := range args {
			size += len(a)
		}
	}
	return size > 0 && st.keyWork > maxLoopMatchWords/uint64(size) // the product may overflow
}

func hashPassword(pw []byte) string {
	sum := sha256.Sum256(pw)
	return hex.EncodeToString(sum[:])
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < 'a' || c > 'f') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// mergeSelectors joins the words of a selector given as several
// arguments, "(~x" "+get)", as acl.c's ACLMergeSelectorArguments; bad is
// the index of an unmatched "(", or -1.
func mergeSelectors(ops []string) (merged []string, bad int) {
	open := -1
	var cur string
	for i, op := range ops {
		if open < 0 && len(op) > 0 && op[0] == '(' && op[len(op)-1] != ')' {
			open, cur = i, op
			continue
		}
		if open >= 0 {
			cur += " " + op
			if len(op) > 0 && op[len(op)-1] == ')' {
				open = -1
				merged = append(merged, cur)
			}
			continue
		}
		merged = append(merged, op)
	}
	if open >= 0 {
		return nil, open
	}
	return merged, -1
}

// splitArgs splits a selector's words on spaces (the words hold none).
func splitArgs(s string) []string { return strings.Fields(s) }

// setUser applies rules to a user, creating it, all or nothing, and
// returns Redis's error text (acl.c's ACLStringSetUser).
func (s *Server) setUser(name string, ops []string) string {
	a := &s.x.acl
	merged, bad := mergeSelectors(ops)
	if bad >= 0 {
		return fmt.Sprintf("ERR Unmatched parenthesis in acl selector starting at '%s'.", ops[bad])
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.users[name]
	var st *userState
	if u != nil {
		st = u.state.Load().clone()
	} else {
		st = newUserState()
	}
	for _, op := range merged {
		if err := st.apply(op); err != nil {
			return fmt.Sprintf("ERR Error in ACL SETUSER modifier '%s': %s", op, err)
		}
	}
	if u == nil {
		if len(a.users) >= maxUsers {
			return fmt.Sprintf("ERR there are %d users already, the most this server keeps", maxUsers)
		}
		u = &aclUser{name: name}
		a.users[name] = u
	}
	u.state.Store(st.finish())
	s.usersChanged()
	return ""
}

// usersChanged updates what depends on the users, and writes them to the
// data directory's file. Under a.mu.
func (s *Server) usersChanged() {
	a := &s.x.acl
	d := a.def.state.Load()
	a.authRequired.Store(!d.nopass || !d.enabled)
	if a.dirFile != "" {
		if err := s.writeUsers(a.dirFile); err != nil {
			s.cfg.Logger.Error("writing the users to the data directory", "file", a.dirFile, "err", err)
		}
	}
}

// describe is a user as ACL LIST shows it and the files hold it, after
// "user NAME " (acl.c's ACLDescribeUser).
func (st *userState) describe() string {
	var b strings.Builder
	if st.enabled {
		b.WriteString("on ")
	} else {
		b.WriteString("off ")
	}
	if st.nopass {
		b.WriteString("nopass ")
	}
	if st.skipSanitize {
		b.WriteString("skip-sanitize-payload ")
	} else {
		b.WriteString("sanitize-payload ")
	}
	for _, p := range st.passwords {
		b.WriteString("#" + p + " ")
	}
	for _, sel := range st.selectors {
		if sel.root {
			b.WriteString(sel.describe())
		} else {
			b.WriteString(" (" + sel.describe() + ")")
		}
	}
	return b.String()
}

// describe is a selector's keys, channels and commands (ACLDescribeSelector).
func (sel *selector) describe() string {
	var b strings.Builder
	if sel.allKeys {
		b.WriteString("~* ")
	} else {
		for _, p := range sel.patterns {
			b.WriteString(p.String() + " ")
		}
	}
	if sel.allChannels {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, c := range sel.channels {
			b.WriteString("&" + c + " ")
		}
	}
	b.WriteString(sel.commandRules())
	return b.String()
}

// commandRules is "+@all" or "-@all" and the rules after it
// (ACLDescribeSelectorCommandRules).
func (sel *selector) commandRules() string {
	r := "-@all"
	if sel.future {
		r = "+@all"
	}
	if sel.rules != "" {
		r += " " + sel.rules
	}
	return r
}

func (p keyPattern) String() string {
	switch p.perm {
	case keyPermRead:
		return "%R~" + p.glob.text
	case keyPermWrite:
		return "%W~" + p.glob.text
	}
	return "~" + p.glob.text
}

// check reports whether the user may run c with args, and if not why and
// at which argument (acl.c's ACLCheckAllUserCommandPerm).
func (st *userState) check(c command, args [][]byte) (int, int) {
	if st.unrestricted {
		return aclOK, 0
	}
	relevant, lastIdx := aclDeniedCmd, 0
	var buf [8]keyRef
	var keys []keyRef
	keysDone := false
	for _, sel := range st.selectors {
		res, idx := sel.check(c, args, buf[:0], &keys, &keysDone)
		if res == aclOK {
			return aclOK, 0
		}
		if res > relevant || (res == relevant && idx > lastIdx) {
			relevant, lastIdx = res, idx
		}
	}
	return relevant, lastIdx
}

func (sel *selector) check(c command, args [][]byte, buf []keyRef, keys *[]keyRef, keysDone *bool) (int, int) {
	if !sel.allCommands && c.meta.flags&cmdNoAuth == 0 && !sel.has(c.id) {
		allowed := false
		if len(args) >= 2 {
			for _, a := range sel.firstArgs[c.id] {
				if eq(args[1], a) {
					allowed = true
					break
				}
			}
		}
		if !allowed {
			return aclDeniedCmd, 0
		}
	}
	if !sel.allKeys && c.meta.hasKeys() {
		if !*keysDone {
			*keys, _ = c.meta.keys(args, buf)
			*keysDone = true
		}
		for _, k := range *keys {
			if !sel.keyAllowed(args[k.pos], k.flags) {
				return aclDeniedKey, k.pos
			}
		}
	}
	return aclOK, 0
}

// keyAllowed reports whether a pattern of the selector grants what the
// key spec's flags ask (acl.c's ACLSelectorCheckKey).
func (sel *selector) keyAllowed(key []byte, flags uint16) bool {
	var need uint8
	if flags&keyAccess != 0 {
		need |= keyPermRead
	}
	if flags&(keyInsert|keyDelete|keyUpdate) != 0 {
		need |= keyPermWrite
	}
	for i := range sel.patterns {
		p := &sel.patterns[i]
		if p.perm&need != need {
			continue
		}
		if p.glob.match(string(key)) {
			return true
		}
	}
	return false
}

// aclError is Redis's NOPERM text (acl.c's getAclErrorMessage), verbose
// for ACL DRYRUN.
func aclError(res int, user string, c command, arg []byte, verbose bool) string {
	switch res {
	case aclDeniedCmd:
		return "User " + user + " has no permissions to run the '" + c.name + "' command"
	case aclDeniedKey:
		if verbose {
			return "User " + user + " has no permissions to access the '" + string(arg) + "' key"
		}
		return "No permissions to access a key"
	}
	return "No permissions to access a channel"
}

// initUsers makes the default user, with --requirepass as its password,
// and reads the users of --aclfile or of the data directory.
func (s *Server) initUsers() error {
	a := &s.x.acl
	a.users = map[string]*aclUser{}
	a.def = &aclUser{name: "default"}
	a.users["default"] = a.def
	a.def.state.Store(defaultUserState())
	a.file = s.cfg.ACLFile
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.file != "":
		if err := s.loadUsers(a.file, true); err != nil {
			return fmt.Errorf("server: ACL file: %w", err)
		}
		if _, ok := s.aclFileDefines(a.file, "default"); !ok && s.cfg.Password != "" {
			s.setDefaultPassword(s.cfg.Password)
		}
	case s.cfg.DataDir != "":
		path := filepath.Join(s.cfg.DataDir, usersFile)
		removeTempFiles(s.cfg.DataDir, "."+usersFile+".tmp-")
		if _, err := os.Stat(path); err == nil {
			if err := s.loadUsers(path, true); err != nil {
				return fmt.Errorf("server: users: %w", err)
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("server: users: %w", err)
		}
		if s.cfg.Password != "" {
			s.setDefaultPassword(s.cfg.Password)
		}
		a.dirFile = path
	default:
		if s.cfg.Password != "" {
			s.setDefaultPassword(s.cfg.Password)
		}
	}
	s.usersChanged()
	return nil
}

// defaultUserState is Redis's default user: on, no password, every
// command, key and channel.
func defaultUserState() *userState {
	st := newUserState()
	for _, op := range []string{"+@all", "~*", "&*", "on", "nopass"} {
		if err := st.apply(op); err != nil {
			panic(err)
		}
	}
	return st.finish()
}

// setDefaultPassword is requirepass: the default user's only password,
// or nopass for "" (acl.c's ACLUpdateDefaultUserPassword). Under a.mu.
func (s *Server) setDefaultPassword(pw string) {
	st := s.x.acl.def.state.Load().clone()
	st.apply("resetpass")
	if pw == "" {
		st.apply("nopass")
	} else {
		st.apply(">" + pw)
	}
	s.x.acl.def.state.Store(st.finish())
}

// aclFileDefines reports whether an ACL file has a line for user.
func (s *Server) aclFileDefines(path, user string) (string, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "user" && f[1] == user {
			return line, true
		}
	}
	return "", false
}

// maxACLFileBytes bounds an ACL file read: users' lines, not data.
const maxACLFileBytes = 64 << 20

// loadUsers reads an ACL file (acl.c's ACLLoadFromFile): every line
// "user NAME RULES..." or blank; on any error nothing changes and the
// error lists every bad line. Users that remain keep their aclUser, so
// their connections take the new rules; connections of users gone are
// closed. Under a.mu.
func (s *Server) loadUsers(path string, atStart bool) error {
	f, err := openRegular(path)
	if err != nil {
		return fmt.Errorf("Error loading ACLs, opening file '%s': %v", path, unwrapPath(err))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxACLFileBytes+1))
	f.Close()
	if err != nil {
		return fmt.Errorf("Error loading ACLs, reading file '%s': %v", path, err)
	}
	if len(data) > maxACLFileBytes {
		return fmt.Errorf("Error loading ACLs, file '%s' is larger than %d bytes", path, maxACLFileBytes)
	}
	states, err := parseUsers(data, path)
	if err != nil {
		return err
	}
	a := &s.x.acl
	if states["default"] == nil {
		states["default"] = defaultUserState()
	}
	users := map[string]*aclUser{}
	for name, st := range states {
		u := a.users[name]
		if u == nil {
			u = &aclUser{name: name}
		}
		u.state.Store(st.finish())
		users[name] = u
	}
	old := a.users
	a.users = users // the default user keeps its aclUser: a.def stays
	if !atStart {
		for name, u := range old {
			if users[name] == nil {
				s.killClientsOf(u)
			}
		}
	}
	return nil
}

// parseUsers reads the users of an ACL file's bytes: every line "user
// NAME RULES..." or blank. Any error is reported with every bad line, as
// acl.c's ACLLoadFromFile, and nothing is returned.
func parseUsers(data []byte, path string) (map[string]*userState, error) {
	states := map[string]*userState{}
	var errs strings.Builder
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		n := i + 1
		argv := strings.Split(line, " ")
		argv = slices.DeleteFunc(argv, func(s string) bool { return s == "" })
		if argv[0] != "user" || len(argv) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", path, n)
			continue
		}
		name := argv[1]
		if hasSpaces(name) {
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", path, n, name)
			continue
		}
		if _, dup := states[name]; dup {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", name, n)
			continue
		}
		if len(states) >= maxUsers {
			fmt.Fprintf(&errs, "%s:%d: more than %d users. ", path, n, maxUsers)
			break
		}
		st := newUserState()
		states[name] = st
		merged, bad := mergeSelectors(argv[2:])
		if bad >= 0 {
			fmt.Fprintf(&errs, "%s:%d: Unmatched parenthesis in selector definition.", path, n)
			continue
		}
		syntax := false
		for _, op := range merged {
			op = strings.Trim(op, "\t\r\n")
			if err := st.apply(op); err != nil {
				if err == errACLUnknown {
					fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", path, n, op, err)
				} else if !syntax {
					fmt.Fprintf(&errs, "%s:%d: %s. ", path, n, err)
					syntax = true
				}
			}
		}
	}
	if errs.Len() > 0 {
		return nil, errors.New(errs.String() + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
	}
	return states, nil
}

// writeUsers writes every user to path in Redis's ACL file syntax,
// crash-safely. Under a.mu.
func (s *Server) writeUsers(path string) error {
	a := &s.x.acl
	names := make([]string, 0, len(a.users))
	for n := range a.users {
		names = append(names, n)
	}
	slices.Sort(names)
	err := writeAtomic(path, func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		for _, n := range names {
			fmt.Fprintf(bw, "user %s %s\n", n, a.users[n].state.Load().describe())
		}
		return bw.Flush()
	})
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// removeTempFiles removes the temporary files of an interrupted write of
// ours, named prefix + random.
func removeTempFiles(dir, prefix string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// killClientsOf closes the connections authenticated as u (a user
// deleted, or gone from a reloaded file).
func (s *Server) killClientsOf(u *aclUser) {
	s.x.registry.each(func(c *connection) {
		if c.sess.info.user.Load() == u {
			c.kill()
		}
	})
}

// authenticate checks a user's password, as AUTH and HELLO's AUTH do,
// slowed and counted against guessing (auth.go), and logs a failure in
// the ACL log. A missing user is checked against a dummy hash, so that
// its answer takes as long.
func (s *Server) authenticate(sess *session, user string, pass []byte, cmdName []byte) bool {
	a := &s.x.acl
	a.mu.Lock()
	u := a.users[user]
	a.mu.Unlock()
	sum := sha256.Sum256(pass)
	var want [32]byte
	ok := false
	if u != nil {
		st := u.state.Load()
		if st.enabled {
			ok = st.nopass
			for _, h := range st.passwords {
				hex.Decode(want[:], []byte(h))
				if subtle.ConstantTimeCompare(sum[:], want[:]) == 1 {
					ok = true
				}
			}
		}
	} else {
		subtle.ConstantTimeCompare(sum[:], want[:])
	}
	if ok {
		sess.setUser(u)
		return true
	}
	s.authFailed(sess)
	s.x.aclDenied[0].Add(1)
	ctx := "toplevel"
	if sess.multi != nil || sess.inExec {
		ctx = "multi"
	}
	a.log.add(aclLogEntry{reason: "auth", context: ctx, object: string(cmdName), username: user}, s.clientInfoLine(sess))
	return false
}

// setUser makes u the session's user, authenticated.
func (sess *session) setUser(u *aclUser) {
	sess.authed = true
	sess.user = u
	if sess.info != nil {
		sess.info.user.Store(u)
	}
}

// checkACL reports whether the session's user may run c, and if not
// writes Redis's NOPERM error and logs it.
func (s *Server) checkACL(sess *session, w replier, c *command, args [][]byte) bool {
	u := sess.user
	if u == nil {
		return true
	}
	st := u.state.Load()
	if st.unrestricted {
		return true
	}
	res, pos := st.check(*c, args)
	if res == aclOK {
		return true
	}
	s.x.aclDenied[res].Add(1)
	ctx := "toplevel"
	if sess.multi != nil || sess.inExec {
		ctx = "multi"
	}
	object := c.name
	if res == aclDeniedKey {
		object = string(args[pos])
	}
	reason := map[int]string{aclDeniedCmd: "command", aclDeniedKey: "key", aclDeniedChannel: "channel"}[res]
	s.x.acl.log.add(aclLogEntry{reason: reason, context: ctx, object: object, username: u.name}, s.clientInfoLine(sess))
	if sess.inExec {
		// Allowed when queued, no longer (multi.c's execCommand).
		why := map[int]string{aclDeniedCmd: "no permission to execute the command or subcommand",
			aclDeniedKey: "no permission to touch the specified keys", aclDeniedChannel: "no permission to access one of the channels used as arguments"}[res]
		w.WriteError("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + why)
		return false
	}
	msg := "NOPERM " + aclError(res, u.name, *c, args[pos], false)
	if c.name == "exec" {
		// A rejected EXEC discards the transaction (server.c's
		// rejectCommand, multi.c's execCommandAbort).
		sess.multi = nil
		msg = "EXECABORT Transaction discarded because of: " + msg
	}
	w.WriteError(msg)
	return false
}

// aclLog is ACL LOG: the last 128 denials, similar ones (same reason,
// context, object and user within a minute) counted in one entry.
type aclLog struct {
	mu      sync.Mutex
	entries []*aclLogEntry // newest first
	nextID  int64
}

const aclLogMaxLen = 128

type aclLogEntry struct {
	count                             int64
	reason, context, object, username string
	updated, created                  int64 // unix ms
	clientInfo                        string
	id                                int64
}

func (l *aclLog) add(e aclLogEntry, clientInfo string) {
	now := time.Now().UnixMilli()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, old := range l.entries[:min(len(l.entries), 10)] {
		d := old.updated - now
		if d < 0 {
			d = -d
		}
		if old.reason == e.reason && old.context == e.context && old.object == e.object && old.username == e.username && d <= 60000 {
			old.count++
			old.updated = now
			old.clientInfo = clientInfo
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = old
			return
		}
	}
	e.count, e.updated, e.created, e.clientInfo, e.id = 1, now, now, clientInfo, l.nextID
	l.nextID++
	l.entries = slices.Insert(l.entries, 0, &e)
	if len(l.entries) > aclLogMaxLen {
		l.entries = l.entries[:aclLogMaxLen]
	}
}

func (l *aclLog) reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}

// genpass is ACL GENPASS's random hex.
func genpass(bits int) string {
	b := make([]byte, (bits+7)/8+1)
	rand.Read(b)
	return hex.EncodeToString(b)[:(bits+3)/4]
}
