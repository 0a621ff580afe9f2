package server

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// ACL's subcommands, as acl.c's aclCommand answers them.

func cmdACLSetuser(s *Server, _ *session, w replier, args [][]byte) {
	name := string(args[2])
	if hasSpaces(name) {
		w.WriteError("ERR Usernames can't contain spaces or null characters")
		return
	}
	ops := make([]string, len(args)-3)
	for i, a := range args[3:] {
		ops[i] = string(a)
	}
	if msg := s.setUser(name, ops); msg != "" {
		w.WriteError(msg)
		return
	}
	w.WriteString("OK")
}

func cmdACLDeluser(s *Server, _ *session, w replier, args [][]byte) {
	for _, a := range args[2:] {
		if string(a) == "default" {
			w.WriteError("ERR The 'default' user cannot be removed")
			return
		}
	}
	a := &s.x.acl
	a.mu.Lock()
	var gone []*aclUser
	for _, name := range args[2:] {
		if u := a.users[string(name)]; u != nil {
			delete(a.users, string(name))
			gone = append(gone, u)
		}
	}
	if len(gone) > 0 {
		s.usersChanged()
	}
	a.mu.Unlock()
	for _, u := range gone {
		s.killClientsOf(u)
	}
	w.WriteInt64(int64(len(gone)))
}

func (s *Server) user(name string) *aclUser {
	a := &s.x.acl
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.users[name]
}

// cmdACLGetuser is ACL GETUSER: flags, passwords (hashes), the root
// selector's commands, keys and channels, and the other selectors.
func cmdACLGetuser(s *Server, _ *session, w replier, args [][]byte) {
	u := s.user(string(args[2]))
	if u == nil {
		w.WriteNull()
		return
	}
	st := u.state.Load()
	w.WriteMap(6)
	w.WriteBulkString("flags")
	var flags []string
	if st.enabled {
		flags = append(flags, "on")
	} else {
		flags = append(flags, "off")
	}
	if st.nopass {
		flags = append(flags, "nopass")
	}
	if st.skipSanitize {
		flags = append(flags, "skip-sanitize-payload")
	} else {
		flags = append(flags, "sanitize-payload")
	}
	w.WriteSet(len(flags))
	for _, f := range flags {
		w.WriteBulkString(f)
	}
	w.WriteBulkString("passwords")
	w.WriteArray(len(st.passwords))
	for _, p := range st.passwords {
		w.WriteBulkString(p)
	}
	writeSelector(w, st.selectors[0])
	w.WriteBulkString("selectors")
	w.WriteArray(len(st.selectors) - 1)
	for _, sel := range st.selectors[1:] {
		w.WriteMap(3)
		writeSelector(w, sel)
	}
}

// writeSelector writes a selector's commands, keys and channels, three
// pairs (acl.c's aclAddReplySelectorDescription).
func writeSelector(w replier, sel *selector) {
	w.WriteBulkString("commands")
	w.WriteBulkString(sel.commandRules())
	w.WriteBulkString("keys")
	if sel.allKeys {
		w.WriteBulkString("~*")
	} else {
		parts := make([]string, len(sel.patterns))
		for i, p := range sel.patterns {
			parts[i] = p.String()
		}
		w.WriteBulkString(strings.Join(parts, " "))
	}
	w.WriteBulkString("channels")
	if sel.allChannels {
		w.WriteBulkString("&*")
	} else {
		parts := make([]string, len(sel.channels))
		for i, c := range sel.channels {
			parts[i] = "&" + c
		}
		w.WriteBulkString(strings.Join(parts, " "))
	}
}

// userNames are the users' names in Redis's order (its rax: bytewise).
func (s *Server) userNames() []string {
	a := &s.x.acl
	a.mu.Lock()
	defer a.mu.Unlock()
	names := make([]string, 0, len(a.users))
	for n := range a.users {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func cmdACLList(s *Server, _ *session, w replier, _ [][]byte) {
	names := s.userNames()
	w.WriteArray(len(names))
	for _, n := range names {
		desc := ""
		if u := s.user(n); u != nil {
			desc = u.state.Load().describe()
		}
		w.WriteBulkString("user " + n + " " + desc)
	}
}

func cmdACLUsers(s *Server, _ *session, w replier, _ [][]byte) {
	names := s.userNames()
	w.WriteArray(len(names))
	for _, n := range names {
		w.WriteBulkString(n)
	}
}

func cmdACLWhoami(_ *Server, sess *session, w replier, _ [][]byte) {
	if sess.user == nil {
		w.WriteNull()
		return
	}
	w.WriteBulkString(sess.user.name)
}

// cmdACLCat lists the categories, or a category's commands served.
func cmdACLCat(_ *Server, _ *session, w replier, args [][]byte) {
	if len(args) == 2 {
		w.WriteArray(len(aclCategoryNames))
		for _, n := range aclCategoryNames {
			w.WriteBulkString(n)
		}
		return
	}
	if len(args) != 3 {
		subcommandSyntaxError(w, args)
		return
	}
	cat := aclCategory(string(args[2]))
	if cat == 0 {
		w.WriteError(fmt.Sprintf("ERR Unknown category '%s'", args[2][:min(len(args[2]), 128)]))
		return
	}
	var names []string
	for _, c := range sortedCommands() {
		if c.meta.acl&cat != 0 {
			names = append(names, c.name)
		}
		for _, sc := range c.subsSorted() {
			if sc.meta.acl&cat != 0 {
				names = append(names, sc.name)
			}
		}
	}
	w.WriteArray(len(names))
	for _, n := range names {
		w.WriteBulkString(n)
	}
}

// cmdACLLog is ACL LOG [count|RESET].
func cmdACLLog(s *Server, _ *session, w replier, args [][]byte) {
	if len(args) > 3 {
		subcommandSyntaxError(w, args)
		return
	}
	l := &s.x.acl.log
	count := int64(10)
	if len(args) == 3 {
		if eq(args[2], "reset") {
			l.reset()
			w.WriteString("OK")
			return
		}
		n, ok := parseInt(args[2])
		if !ok {
			w.WriteError("ERR value is not an integer or out of range")
			return
		}
		count = max(n, 0)
	}
	l.mu.Lock()
	entries := make([]aclLogEntry, 0, min(int(count), len(l.entries)))
	for _, e := range l.entries[:min(int(count), len(l.entries))] {
		entries = append(entries, *e)
	}
	l.mu.Unlock()
	now := time.Now().UnixMilli()
	w.WriteArray(len(entries))
	for _, e := range entries {
		w.WriteMap(10)
		w.WriteBulkString("count")
		w.WriteInt64(e.count)
		w.WriteBulkString("reason")
		w.WriteBulkString(e.reason)
		w.WriteBulkString("context")
		w.WriteBulkString(e.context)
		w.WriteBulkString("object")
		w.WriteBulkString(e.object)
		w.WriteBulkString("username")
		w.WriteBulkString(e.username)
		w.WriteBulkString("age-seconds")
		w.WriteDouble(float64(now-e.updated) / 1000)
		w.WriteBulkString("client-info")
		w.WriteBulkString(e.clientInfo)
		w.WriteBulkString("entry-id")
		w.WriteInt64(e.id)
		w.WriteBulkString("timestamp-created")
		w.WriteInt64(e.created)
		w.WriteBulkString("timestamp-last-updated")
		w.WriteInt64(e.updated)
	}
}

const errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."

// cmdACLSave writes the users to --aclfile. Without one, Redis's error:
// the users are kept in the data directory at every change instead.
func cmdACLSave(s *Server, _ *session, w replier, _ [][]byte) {
	a := &s.x.acl
	if a.file == "" {
		w.WriteError(errNoACLFile)
		return
	}
	a.mu.Lock()
	err := s.writeUsers(a.file)
	a.mu.Unlock()
	if err != nil {
		s.cfg.Logger.Error("ACL SAVE", "file", a.file, "err", err)
		w.WriteError("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
		return
	}
	w.WriteString("OK")
}

func cmdACLLoad(s *Server, _ *session, w replier, _ [][]byte) {
	a := &s.x.acl
	if a.file == "" {
		w.WriteError(errNoACLFile)
		return
	}
	a.mu.Lock()
	err := s.loadUsers(a.file, false)
	if err == nil {
		s.usersChanged()
	}
	a.mu.Unlock()
	if err != nil {
		w.WriteError("ERR " + err.Error())
		return
	}
	w.WriteString("OK")
}

const genpassMaxBits = 4096

func cmdACLGenpass(_ *Server, _ *session, w replier, args [][]byte) {
	if len(args) > 3 {
		subcommandSyntaxError(w, args)
		return
	}
	bits := int64(256)
	if len(args) == 3 {
		n, ok := parseInt(args[2])
		if !ok {
			w.WriteError("ERR value is not an integer or out of range")
			return
		}
		bits = n
	}
	if bits <= 0 || bits > genpassMaxBits {
		w.WriteError(fmt.Sprintf("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to %d", genpassMaxBits))
		return
	}
	w.WriteBulkString(genpass(int(bits)))
}

// cmdACLDryrun is ACL DRYRUN user command [arg ...]: OK, or why the user
// may not run it.
func cmdACLDryrun(s *Server, _ *session, w replier, args [][]byte) {
	u := s.user(string(args[2]))
	if u == nil {
		w.WriteError(fmt.Sprintf("ERR User '%s' not found", args[2]))
		return
	}
	cargs := args[3:]
	c, ok := lookup(cargs[0])
	if ok && c.subs != nil && len(cargs) >= 2 {
		c, ok = lookupIn(c.subs, cargs[1])
	}
	if !ok {
		w.WriteError(fmt.Sprintf("ERR Command '%s' not found", cargs[0]))
		return
	}
	if !c.arityOK(len(cargs)) {
		w.WriteError(fmt.Sprintf("ERR wrong number of arguments for '%s' command", c.name))
		return
	}
	if res, pos := u.state.Load().check(c, cargs); res != aclOK {
		w.WriteBulkString(aclError(res, u.name, c, cargs[pos], true))
		return
	}
	w.WriteString("OK")
}

var aclHelp = []string{
	"CAT [<category>]",
	"    List all commands that belong to <category>, or all command categories",
	"    when no category is specified.",
	"DELUSER <username> [<username> ...]",
	"    Delete a list of users.",
	"DRYRUN <username> <command> [<arg> ...]",
	"    Returns whether the user can execute the given command without executing the command.",
	"GETUSER <username>",
	"    Get the user's details.",
	"GENPASS [<bits>]",
	"    Generate a secure 256-bit user password. The optional `bits` argument can",
	"    be used to specify a different size.",
	"LIST",
	"    Show users details in config file format.",
	"LOAD",
	"    Reload users from the ACL file.",
	"LOG [<count> | RESET]",
	"    Show the ACL log entries.",
	"SAVE",
	"    Save the current config to the ACL file.",
	"SETUSER <username> <attribute> [<attribute> ...]",
	"    Create or modify a user with the specified attributes.",
	"USERS",
	"    List all the registered usernames.",
	"WHOAMI",
	"    Return the current connection username.",
}
