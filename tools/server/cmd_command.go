package server

import (
	"slices"
	"strings"
)

// COMMAND and its subcommands, as Redis 7.4's server.c answers them, for
// the commands served: cluster-aware clients (go-redis, redis-py) read
// key positions from them, redis-cli its hints.

// sortedCommands is the commands served, by name.
func sortedCommands() []command {
	out := make([]command, 0, len(commands))
	for _, c := range commands {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b command) int { return strings.Compare(a.name, b.name) })
	return out
}

// subsSorted is a container's subcommands served, by name.
func (c command) subsSorted() []command {
	out := make([]command, 0, len(c.subs))
	for _, sc := range c.subs {
		out = append(out, sc)
	}
	slices.SortFunc(out, func(a, b command) int { return strings.Compare(a.name, b.name) })
	return out
}

// cmdCommand is COMMAND alone: every command's info.
func cmdCommand(_ *Server, _ *session, w replier, _ [][]byte) {
	all := sortedCommands()
	w.WriteArray(len(all))
	for _, c := range all {
		writeCommandInfo(w, c)
	}
}

func cmdCommandCount(_ *Server, _ *session, w replier, _ [][]byte) {
	w.WriteInt64(int64(len(commands)))
}

// cmdCommandInfo is COMMAND INFO [name ...]: nil for a name not served.
func cmdCommandInfo(s *Server, sess *session, w replier, args [][]byte) {
	if len(args) == 2 {
		cmdCommand(s, sess, w, args)
		return
	}
	w.WriteArray(len(args) - 2)
	for _, name := range args[2:] {
		if c, ok := served(string(name)); ok {
			writeCommandInfo(w, c)
		} else {
			w.WriteNull()
		}
	}
}

// writeCommandInfo writes one command's entry (server.c's
// addReplyCommandInfo).
func writeCommandInfo(w replier, c command) {
	m := c.meta
	w.WriteArray(10)
	w.WriteBulkString(c.name)
	w.WriteInt64(int64(m.arity))
	writeFlagSet(w, m.flags, cmdFlagNames[:])
	w.WriteInt64(int64(m.first))
	w.WriteInt64(int64(m.last))
	w.WriteInt64(int64(m.step))
	n := 0
	for i := range aclCategoryNames {
		if m.acl&(1<<i) != 0 {
			n++
		}
	}
	w.WriteSet(n)
	for i, name := range aclCategoryNames {
		if m.acl&(1<<i) != 0 {
			w.WriteString("@" + name)
		}
	}
	w.WriteSet(len(m.tips))
	for _, t := range m.tips {
		w.WriteBulkString(t)
	}
	writeKeySpecs(w, m.keySpecs)
	if c.subs == nil {
		w.WriteSet(0)
		return
	}
	subs := c.subsSorted()
	w.WriteArray(len(subs))
	for _, sc := range subs {
		writeCommandInfo(w, sc)
	}
}

// writeFlagSet writes the names of the bits set in flags, in their
// order, as a set of simple strings.
func writeFlagSet[T uint8 | uint16 | uint64](w replier, flags T, names []string) {
	n := 0
	for i := range names {
		if flags&(1<<i) != 0 {
			n++
		}
	}
	w.WriteSet(n)
	for i, name := range names {
		if flags&(1<<i) != 0 {
			w.WriteString(name)
		}
	}
}

// writeKeySpecs writes key specs as server.c's addReplyCommandKeySpecs.
func writeKeySpecs(w replier, specs []keySpecMeta) {
	w.WriteSet(len(specs))
	for _, ks := range specs {
		n := 3
		if ks.notes != "" {
			n++
		}
		w.WriteMap(n)
		if ks.notes != "" {
			w.WriteBulkString("notes")
			w.WriteBulkString(ks.notes)
		}
		w.WriteBulkString("flags")
		writeFlagSet(w, ks.flags, keyFlagNames[:])
		w.WriteBulkString("begin_search")
		w.WriteMap(2)
		w.WriteBulkString("type")
		switch ks.search {
		case searchIndex:
			w.WriteBulkString("index")
			w.WriteBulkString("spec")
			w.WriteMap(1)
			w.WriteBulkString("index")
			w.WriteInt64(int64(ks.pos))
		case searchKeyword:
			w.WriteBulkString("keyword")
			w.WriteBulkString("spec")
			w.WriteMap(2)
			w.WriteBulkString("keyword")
			w.WriteBulkString(ks.keyword)
			w.WriteBulkString("startfrom")
			w.WriteInt64(int64(ks.startFrom))
		default:
			w.WriteBulkString("unknown")
			w.WriteBulkString("spec")
			w.WriteMap(0)
		}
		w.WriteBulkString("find_keys")
		w.WriteMap(2)
		w.WriteBulkString("type")
		switch ks.find {
		case findRange:
			w.WriteBulkString("range")
			w.WriteBulkString("spec")
			w.WriteMap(3)
			w.WriteBulkString("lastkey")
			w.WriteInt64(int64(ks.lastKey))
			w.WriteBulkString("keystep")
			w.WriteInt64(int64(ks.keyStep))
			w.WriteBulkString("limit")
			w.WriteInt64(int64(ks.limit))
		case findKeynum:
			w.WriteBulkString("keynum")
			w.WriteBulkString("spec")
			w.WriteMap(3)
			w.WriteBulkString("keynumidx")
			w.WriteInt64(int64(ks.keynumIdx))
			w.WriteBulkString("firstkey")
			w.WriteInt64(int64(ks.firstKey))
			w.WriteBulkString("keystep")
			w.WriteInt64(int64(ks.keyStep))
		default:
			w.WriteBulkString("unknown")
			w.WriteBulkString("spec")
			w.WriteMap(0)
		}
	}
}

// cmdCommandDocs is COMMAND DOCS [name ...]: a map of the names served
// to their documentation.
func cmdCommandDocs(_ *Server, _ *session, w replier, args [][]byte) {
	var list []command
	if len(args) == 2 {
		list = sortedCommands()
	} else {
		for _, name := range args[2:] {
			if c, ok := served(string(name)); ok {
				list = append(list, c)
			}
		}
	}
	w.WriteMap(len(list))
	for _, c := range list {
		w.WriteBulkString(c.name)
		writeCommandDocs(w, c)
	}
}

// writeCommandDocs writes server.c's addReplyCommandDocs.
func writeCommandDocs(w replier, c command) {
	m := c.meta
	n := 1
	for _, f := range []bool{m.summary != "", m.since != "", m.module != "", m.complexity != "", m.docFlags != 0,
		m.deprecatedSince != "", m.replacedBy != "", len(m.history) > 0, len(m.args) > 0, c.subs != nil} {
		if f {
			n++
		}
	}
	w.WriteMap(n)
	str := func(k, v string) {
		if v != "" {
			w.WriteBulkString(k)
			w.WriteBulkString(v)
		}
	}
	str("summary", m.summary)
	str("since", m.since)
	w.WriteBulkString("group")
	w.WriteBulkString(m.group)
	str("complexity", m.complexity)
	str("module", m.module)
	if m.docFlags != 0 {
		w.WriteBulkString("doc_flags")
		writeFlagSet(w, m.docFlags, docFlagNames[:])
	}
	str("deprecated_since", m.deprecatedSince)
	str("replaced_by", m.replacedBy)
	if len(m.history) > 0 {
		w.WriteBulkString("history")
		w.WriteSet(len(m.history))
		for _, h := range m.history {
			w.WriteArray(2)
			w.WriteBulkString(h[0])
			w.WriteBulkString(h[1])
		}
	}
	if len(m.args) > 0 {
		w.WriteBulkString("arguments")
		writeArgDocs(w, m.args)
	}
	if c.subs != nil {
		w.WriteBulkString("subcommands")
		subs := c.subsSorted()
		w.WriteMap(len(subs))
		for _, sc := range subs {
			w.WriteBulkString(sc.name)
			writeCommandDocs(w, sc)
		}
	}
}

// writeArgDocs writes server.c's addReplyCommandArgList.
func writeArgDocs(w replier, args []argMeta) {
	w.WriteArray(len(args))
	for _, a := range args {
		composite := a.typ == argOneof || a.typ == argBlock
		n := 2
		for _, f := range []bool{a.keySpec >= 0, a.token != "", a.summary != "", a.since != "", a.deprecatedSince != "", a.flags != 0, true} {
			if f {
				n++
			}
		}
		w.WriteMap(n)
		w.WriteBulkString("name")
		w.WriteBulkString(a.name)
		w.WriteBulkString("type")
		w.WriteBulkString(argTypeNames[a.typ])
		if !composite {
			w.WriteBulkString("display_text")
			if a.display != "" {
				w.WriteBulkString(a.display)
			} else {
				w.WriteBulkString(a.name)
			}
		}
		if a.keySpec >= 0 {
			w.WriteBulkString("key_spec_index")
			w.WriteInt64(int64(a.keySpec))
		}
		str := func(k, v string) {
			if v != "" {
				w.WriteBulkString(k)
				w.WriteBulkString(v)
			}
		}
		str("token", a.token)
		str("summary", a.summary)
		str("since", a.since)
		str("deprecated_since", a.deprecatedSince)
		if a.flags != 0 {
			w.WriteBulkString("flags")
			writeFlagSet(w, a.flags, argFlagNames[:])
		}
		if composite {
			w.WriteBulkString("arguments")
			writeArgDocs(w, a.args)
		}
	}
}

// cmdCommandGetkeys is COMMAND GETKEYS and GETKEYSANDFLAGS (server.c's
// getKeysSubcommandImpl).
func cmdCommandGetkeys(_ *Server, _ *session, w replier, args [][]byte) {
	withFlags := eq(args[1], "getkeysandflags")
	cargs := args[2:]
	c, ok := lookup(cargs[0])
	if ok && c.subs != nil && len(cargs) >= 2 {
		c, ok = lookupIn(c.subs, cargs[1])
	}
	m := c.meta
	switch {
	case !ok:
		w.WriteError("ERR Invalid command specified")
		return
	case !m.hasKeys():
		w.WriteError("ERR The command has no key arguments")
		return
	case (m.arity > 0 && m.arity != len(cargs)) || len(cargs) < -m.arity:
		w.WriteError("ERR Invalid number of arguments specified for command")
		return
	}
	keys, ok := m.keys(cargs, nil)
	if !ok || len(keys) == 0 {
		if m.flags&cmdNoMandatoryKeys != 0 {
			w.WriteArray(0)
		} else {
			w.WriteError("ERR Invalid arguments specified for command")
		}
		return
	}
	w.WriteArray(len(keys))
	for _, k := range keys {
		if withFlags {
			w.WriteArray(2)
			w.WriteBulk(cargs[k.pos])
			writeFlagSet(w, k.flags, keyFlagNames[:])
		} else {
			w.WriteBulk(cargs[k.pos])
		}
	}
}

// cmdCommandList is COMMAND LIST [FILTERBY MODULE name|ACLCAT cat|PATTERN p].
func cmdCommandList(_ *Server, _ *session, w replier, args [][]byte) {
	keep := func(command) bool { return true }
	for i := 2; i < len(args); i++ {
		if !eq(args[i], "filterby") || len(args)-1-i != 2 {
			w.WriteError("ERR syntax error")
			return
		}
		arg := string(args[i+2])
		switch {
		case eq(args[i+1], "module"):
			keep = func(c command) bool { return c.meta.module != "" && c.meta.module == arg }
		case eq(args[i+1], "aclcat"):
			cat := aclCategory(arg)
			keep = func(c command) bool { return cat != 0 && c.meta.acl&cat != 0 }
		case eq(args[i+1], "pattern"):
			if len(arg) > maxPatternBytes {
				w.WriteError(errPatternTooLong)
				return
			}
			g := compileGlob(arg, true)
			keep = func(c command) bool { return g.match(c.name) }
		default:
			w.WriteError("ERR syntax error")
			return
		}
		i += 2
	}
	var names []string
	for _, c := range sortedCommands() {
		if keep(c) {
			names = append(names, c.name)
		}
		for _, sc := range c.subsSorted() {
			if keep(sc) {
				names = append(names, sc.name)
			}
		}
	}
	w.WriteArray(len(names))
	for _, n := range names {
		w.WriteBulkString(n)
	}
}

var commandHelp = []string{
	"(no subcommand)",
	"    Return details about all Redis commands.",
	"COUNT",
	"    Return the total number of commands in this Redis server.",
	"LIST",
	"    Return a list of all commands in this Redis server.",
	"INFO [<command-name> ...]",
	"    Return details about multiple Redis commands.",
	"    If no command names are given, documentation details for all",
	"    commands are returned.",
	"DOCS [<command-name> ...]",
	"    Return documentation details about multiple Redis commands.",
	"    If no command names are given, documentation details for all",
	"    commands are returned.",
	"GETKEYS <full-command>",
	"    Return the keys from a full Redis command.",
	"GETKEYSANDFLAGS <full-command>",
	"    Return the keys and the access flags from a full Redis command.",
}
