package server

import (
	"slices"
	"strings"
)

// What COMMAND, ACL and the cluster-aware clients know of a command: Redis
// 7.4's metadata, as its src/commands/*.json declare it (commands_redis.go
// is generated from them by gen_commands.go), and RedisBloom's, as its
// RedisModule_CreateCommand calls declare it (moduleCommandMeta).

// cmdMeta is one command's or subcommand's metadata.
type cmdMeta struct {
	name            string // full name, lower case: "get", "config|get"
	summary         string
	since           string
	group           string
	complexity      string
	deprecatedSince string
	replacedBy      string
	docFlags        uint8
	history         [][2]string
	tips            []string
	arity           int
	flags           uint64 // cmdFlag*
	acl             uint64 // aclCat*, with the categories Redis adds for the flags
	keySpecs        []keySpecMeta
	args            []argMeta
	subs            []*cmdMeta
	// module is the module that registered the command ("bf"), "" for
	// Redis's own.
	module string

	// Computed at start (initMeta).
	parent            *cmdMeta
	first, last, step int // the legacy key range COMMAND INFO reports
}

// Command flags, in the order COMMAND INFO lists them (server.c's
// addReplyFlagsForCommand), then those it hides.
const (
	cmdWrite uint64 = 1 << iota
	cmdReadonly
	cmdDenyOOM
	cmdModule
	cmdAdmin
	cmdPubsub
	cmdNoScript
	cmdBlocking
	cmdLoading
	cmdStale
	cmdSkipMonitor
	cmdSkipSlowlog
	cmdAsking
	cmdFast
	cmdNoAuth
	cmdNoMandatoryKeys
	cmdNoAsyncLoading
	cmdNoMulti
	cmdMovableKeys
	cmdAllowBusy
	// hidden from COMMAND INFO
	cmdMayReplicate
	cmdSentinel
	cmdOnlySentinel
	cmdProtected
	cmdTouchesArbitraryKeys
	cmdModuleGetKeys
)

var cmdFlagNames = [...]string{"write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript",
	"blocking", "loading", "stale", "skip_monitor", "skip_slowlog", "asking", "fast", "no_auth",
	"no_mandatory_keys", "no_async_loading", "no_multi", "movablekeys", "allow_busy"}

// Documentation flags (COMMAND DOCS's doc_flags).
const (
	docDeprecated uint8 = 1 << iota
	docSyscmd
)

var docFlagNames = [...]string{"deprecated", "syscmd"}

// ACL categories, in acl.c's order (ACL CAT and COMMAND INFO list them so),
// then those RedisBloom adds.
const (
	aclKeyspace uint64 = 1 << iota
	aclRead
	aclWrite
	aclSet
	aclSortedSet
	aclList
	aclHash
	aclString
	aclBitmap
	aclHyperLogLog
	aclGeo
	aclStream
	aclPubsub
	aclAdmin
	aclFast
	aclSlow
	aclBlocking
	aclDangerous
	aclConnection
	aclTransaction
	aclScripting
	aclBloom
	aclCuckoo
)

var aclCategoryNames = [...]string{"keyspace", "read", "write", "set", "sortedset", "list", "hash",
	"string", "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
	"blocking", "dangerous", "connection", "transaction", "scripting", "bloom", "cuckoo"}

// aclCategory is the bit of a category name (any case), 0 if unknown.
func aclCategory(name string) uint64 {
	for i, n := range aclCategoryNames {
		if strings.EqualFold(n, name) {
			return 1 << i
		}
	}
	return 0
}

// implicitCategories adds what server.c's setImplicitACLCategories adds
// for a Redis command's flags.
func implicitCategories(flags, acl uint64) uint64 {
	if flags&cmdWrite != 0 {
		acl |= aclWrite
	}
	if flags&cmdReadonly != 0 && acl&aclScripting == 0 {
		acl |= aclRead
	}
	if flags&cmdAdmin != 0 {
		acl |= aclAdmin | aclDangerous
	}
	if flags&cmdPubsub != 0 {
		acl |= aclPubsub
	}
	if flags&cmdFast != 0 {
		acl |= aclFast
	}
	if flags&cmdBlocking != 0 {
		acl |= aclBlocking
	}
	if acl&aclFast == 0 {
		acl |= aclSlow
	}
	return acl
}

// Key spec flags, in the order COMMAND INFO lists them.
const (
	keyRO uint16 = 1 << iota
	keyRW
	keyOW
	keyRM
	keyAccess
	keyUpdate
	keyInsert
	keyDelete
	keyNotKey
	keyIncomplete
	keyVariableFlags
)

var keyFlagNames = [...]string{"RO", "RW", "OW", "RM", "access", "update", "insert", "delete",
	"not_key", "incomplete", "variable_flags"}

// Begin-search and find-keys kinds of a key spec.
const (
	searchUnknown uint8 = iota
	searchIndex
	searchKeyword
	findUnknown = 0
	findRange   = 1
	findKeynum  = 2
)

// keySpecMeta is one of a command's key specs.
type keySpecMeta struct {
	notes     string
	flags     uint16
	search    uint8 // searchIndex: pos; searchKeyword: keyword, startFrom
	pos       int
	keyword   string
	startFrom int
	find      uint8 // findRange: lastKey, keyStep, limit; findKeynum: keynumIdx, firstKey, keyStep
	lastKey   int
	keyStep   int
	limit     int
	keynumIdx int
	firstKey  int
}

// Argument types, as COMMAND DOCS names them.
var argTypeNames = [...]string{"string", "integer", "double", "key", "pattern", "unix-time", "pure-token", "oneof", "block"}

const (
	argOneof = 7
	argBlock = 8
)

// Argument flags.
const (
	argOptional uint8 = 1 << iota
	argMultiple
	argMultipleToken
)

var argFlagNames = [...]string{"optional", "multiple", "multiple_token"}

// argMeta is one argument of COMMAND DOCS.
type argMeta struct {
	name, display, token, summary, since, deprecatedSince string
	typ                                                   uint8
	keySpec                                               int // -1: none
	flags                                                 uint8
	args                                                  []argMeta
}

// metaByName indexes Redis's commands and subcommands by full name; it
// also holds RedisBloom's.
var metaByName = map[string]*cmdMeta{}

// initMeta links subcommands to their parents, computes the legacy key
// ranges and indexes every command by name.
func initMeta(cmds []*cmdMeta) {
	for _, m := range cmds {
		if m.flags&cmdOnlySentinel != 0 {
			continue
		}
		m.legacyRange()
		metaByName[m.name] = m
		for _, sub := range m.subs {
			sub.parent = m
			sub.legacyRange()
			metaByName[sub.name] = sub
		}
	}
}

// legacyRange computes COMMAND INFO's first key, last key and step from
// the key specs, as server.c's populateCommandLegacyRangeSpec, and the
// movablekeys flag.
func (m *cmdMeta) legacyRange() {
	if m.flags&cmdModuleGetKeys != 0 {
		m.flags |= cmdMovableKeys
	}
	if len(m.keySpecs) == 0 {
		return
	}
	if len(m.keySpecs) == 1 && m.keySpecs[0].search == searchIndex && m.keySpecs[0].find == findRange {
		ks := m.keySpecs[0]
		m.first, m.step = ks.pos, ks.keyStep
		m.last = ks.lastKey
		if m.last >= 0 {
			m.last += m.first
		}
		if ks.flags&keyIncomplete != 0 {
			m.flags |= cmdMovableKeys
		}
		return
	}
	const none = int(^uint(0) >> 1)
	first, last, prevLast := none, 0, 0
	for _, ks := range m.keySpecs {
		if ks.search != searchIndex || ks.find != findRange {
			m.flags |= cmdMovableKeys
			continue
		}
		if ks.keyStep != 1 || (prevLast != 0 && prevLast != ks.pos-1) {
			m.flags |= cmdMovableKeys
			continue
		}
		if ks.flags&keyIncomplete != 0 {
			m.flags |= cmdMovableKeys
		}
		first = min(first, ks.pos)
		abs := ks.lastKey
		if abs >= 0 {
			abs += ks.pos
		}
		// Unsigned, as Redis compares: a negative last key wins.
		if uint32(abs) > uint32(last) {
			last = abs
		}
		prevLast = last
	}
	if first == none {
		m.flags |= cmdMovableKeys
		return
	}
	m.first, m.last, m.step = first, last, 1
}

// hasKeys reports whether the command names keys (db.c's
// doesCommandHaveKeys, for commands without a key-finding function).
func (m *cmdMeta) hasKeys() bool {
	for _, ks := range m.keySpecs {
		if ks.flags&keyNotKey == 0 {
			return true
		}
	}
	return false
}

// keyRef is one key of a command: its argument's index and its spec's
// flags.
type keyRef struct {
	pos   int
	flags uint16
}

// keys finds the keys of a command from its key specs, as db.c's
// getKeysUsingKeySpecs; ok is false where Redis finds the specs invalid
// for these arguments (a syntax error the command reports itself).
func (m *cmdMeta) keys(args [][]byte, out []keyRef) ([]keyRef, bool) {
	argc := len(args)
	for _, ks := range m.keySpecs {
		if ks.flags&keyNotKey != 0 {
			continue
		}
		first := 0
		switch ks.search {
		case searchIndex:
			first = ks.pos
		case searchKeyword:
			start, end := ks.startFrom, 1
			if start > 0 {
				end = argc - 1
			} else {
				start = argc + ks.startFrom
			}
			for i := start; i != end; {
				if i >= argc || i < 1 {
					break
				}
				if eq(args[i], ks.keyword) {
					first = i + 1
					break
				}
				if start <= end {
					i++
				} else {
					i--
				}
			}
			if first == 0 {
				continue
			}
		default:
			return out[:0], false
		}
		var last, step int
		switch ks.find {
		case findRange:
			step = ks.keyStep
			switch {
			case ks.lastKey >= 0:
				last = first + ks.lastKey
			case ks.limit == 0:
				last = argc + ks.lastKey
			default:
				last = first + ((argc-first)/ks.limit + ks.lastKey)
			}
		case findKeynum:
			step = ks.keyStep
			if ks.keynumIdx >= argc || first+ks.keynumIdx >= argc {
				return out[:0], false
			}
			n, ok := parseInt(args[first+ks.keynumIdx])
			if !ok || n < 0 || n > int64(argc) {
				return out[:0], false
			}
			first += ks.firstKey
			last = first + int(n) - 1
		default:
			return out[:0], false
		}
		if last >= argc || last < first || first >= argc {
			return out[:0], false
		}
		for i := first; i <= last; i += step {
			out = append(out, keyRef{i, ks.flags})
			if step <= 0 {
				break
			}
		}
		if ks.flags&keyIncomplete != 0 {
			return out[:0], false
		}
	}
	return out, true
}

// moduleCommandMeta is the metadata of a RedisBloom command: what
// RedisModule_CreateCommand(ctx, name, f, flags, 1, 1, 1) registers in
// Redis 7.4 (module.c's moduleCreateCommandProxy: arity -1, one key spec
// at argument 1 with full access, group "module"), with the ACL
// categories RedisBloom declares for it (rebloom.c's RegisterCommand:
// "write" or "read", "fast" for some, and "bloom" or "cuckoo").
// RedisBloom 2.8.20 itself declares no categories, so that under Redis
// 7.4 "+@read" does not cover BF.EXISTS; RedisBloom 8 declares these.
func moduleCommandMeta(name string, flags, acl uint64) *cmdMeta {
	return &cmdMeta{name: name, group: "module", module: "bf", arity: -1, flags: flags | cmdModule, acl: acl,
		keySpecs: []keySpecMeta{{flags: keyRW | keyAccess | keyUpdate, search: searchIndex, pos: 1,
			find: findRange, lastKey: 0, keyStep: 1}}}
}

// RedisBloom's registration flags (rebloom.c's CREATE_WRCMD, CREATE_ROCMD).
const (
	moduleWrite    = cmdWrite | cmdDenyOOM
	moduleReadonly = cmdReadonly | cmdFast
)

var moduleCommands = []*cmdMeta{
	moduleCommandMeta("bf.reserve", moduleWrite, aclWrite|aclFast|aclBloom),
	moduleCommandMeta("bf.add", moduleWrite, aclWrite|aclBloom),
	moduleCommandMeta("bf.madd", moduleWrite, aclWrite|aclBloom),
	moduleCommandMeta("bf.insert", moduleWrite, aclWrite|aclBloom),
	moduleCommandMeta("bf.exists", moduleReadonly, aclRead|aclBloom),
	moduleCommandMeta("bf.mexists", moduleReadonly, aclRead|aclBloom),
	moduleCommandMeta("bf.info", moduleReadonly, aclRead|aclFast|aclBloom),
	moduleCommandMeta("bf.card", moduleReadonly, aclRead|aclFast|aclBloom),
	moduleCommandMeta("bf.scandump", moduleReadonly, aclRead|aclBloom),
	moduleCommandMeta("bf.loadchunk", moduleWrite, aclWrite|aclBloom),
	moduleCommandMeta("cf.reserve", moduleWrite, aclWrite|aclFast|aclCuckoo),
	moduleCommandMeta("cf.add", moduleWrite, aclWrite|aclCuckoo),
	moduleCommandMeta("cf.addnx", moduleWrite, aclWrite|aclCuckoo),
	moduleCommandMeta("cf.insert", moduleWrite, aclWrite|aclCuckoo),
	moduleCommandMeta("cf.insertnx", moduleWrite, aclWrite|aclCuckoo),
	moduleCommandMeta("cf.exists", moduleReadonly, aclRead|aclCuckoo),
	moduleCommandMeta("cf.mexists", moduleReadonly, aclRead|aclCuckoo),
	moduleCommandMeta("cf.count", moduleReadonly, aclRead|aclCuckoo),
	// "Technically a write command, but doesn't change memory profile."
	moduleCommandMeta("cf.del", cmdWrite|cmdFast, aclWrite|aclCuckoo),
	moduleCommandMeta("cf.scandump", moduleReadonly, aclRead|aclCuckoo),
	moduleCommandMeta("cf.loadchunk", moduleWrite, aclWrite|aclCuckoo),
	moduleCommandMeta("cf.info", moduleReadonly, aclRead|aclFast|aclCuckoo),
	moduleCommandMeta("cf.compact", moduleWrite, aclWrite|aclCuckoo),
	moduleCommandMeta("cf.debug", moduleReadonly, aclRead|aclCuckoo),
}

// sortedSubs returns a container's subcommands sorted by name.
func sortedSubs(subs []*cmdMeta) []*cmdMeta {
	out := slices.Clone(subs)
	slices.SortFunc(out, func(a, b *cmdMeta) int { return strings.Compare(a.name, b.name) })
	return out
}
