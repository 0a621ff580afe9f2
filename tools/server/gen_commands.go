//go:build ignore

// gen_commands writes commands_redis.go, Redis's command metadata (what
// COMMAND INFO and COMMAND DOCS answer, and what ACL rules name), from
// the src/commands/*.json files of a Redis source tree:
//
//	go run gen_commands.go /path/to/redis-7.4.1/src/commands > commands_redis.go
//
// It keeps what Redis compiles into its command table (see its
// utils/generate-command-code.py): names, arity, flags, ACL categories
// with those server.c adds for the flags, key specs, tips, history and the
// arguments of COMMAND DOCS, but not the reply schemas.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type jsonArg struct {
	Name            string    `json:"name"`
	Type            string    `json:"type"`
	Display         string    `json:"display"`
	KeySpecIndex    *int      `json:"key_spec_index"`
	Token           string    `json:"token"`
	Summary         string    `json:"summary"`
	Since           string    `json:"since"`
	DeprecatedSince string    `json:"deprecated_since"`
	Optional        bool      `json:"optional"`
	Multiple        bool      `json:"multiple"`
	MultipleToken   bool      `json:"multiple_token"`
	Arguments       []jsonArg `json:"arguments"`
}

type jsonKeySpec struct {
	Notes       string   `json:"notes"`
	Flags       []string `json:"flags"`
	BeginSearch struct {
		Index *struct {
			Pos int `json:"pos"`
		} `json:"index"`
		Keyword *struct {
			Keyword   string `json:"keyword"`
			Startfrom int    `json:"startfrom"`
		} `json:"keyword"`
	} `json:"begin_search"`
	FindKeys struct {
		Range *struct {
			Lastkey int `json:"lastkey"`
			Step    int `json:"step"`
			Limit   int `json:"limit"`
		} `json:"range"`
		Keynum *struct {
			Keynumidx int `json:"keynumidx"`
			Firstkey  int `json:"firstkey"`
			Step      int `json:"step"`
		} `json:"keynum"`
	} `json:"find_keys"`
}

type jsonCommand struct {
	name            string
	Summary         string        `json:"summary"`
	Complexity      string        `json:"complexity"`
	Group           string        `json:"group"`
	Since           string        `json:"since"`
	Arity           int           `json:"arity"`
	Container       string        `json:"container"`
	History         [][2]string   `json:"history"`
	DeprecatedSince string        `json:"deprecated_since"`
	ReplacedBy      string        `json:"replaced_by"`
	DocFlags        []string      `json:"doc_flags"`
	CommandFlags    []string      `json:"command_flags"`
	ACLCategories   []string      `json:"acl_categories"`
	KeySpecs        []jsonKeySpec `json:"key_specs"`
	CommandTips     []string      `json:"command_tips"`
	Arguments       []jsonArg     `json:"arguments"`
	subs            []*jsonCommand
}

var cmdFlags = map[string]string{
	"WRITE": "cmdWrite", "READONLY": "cmdReadonly", "DENYOOM": "cmdDenyOOM", "MODULE": "cmdModule",
	"ADMIN": "cmdAdmin", "PUBSUB": "cmdPubsub", "NOSCRIPT": "cmdNoScript", "BLOCKING": "cmdBlocking",
	"LOADING": "cmdLoading", "STALE": "cmdStale", "SKIP_MONITOR": "cmdSkipMonitor",
	"SKIP_SLOWLOG": "cmdSkipSlowlog", "ASKING": "cmdAsking", "FAST": "cmdFast", "NO_AUTH": "cmdNoAuth",
	"NO_MANDATORY_KEYS": "cmdNoMandatoryKeys", "NO_ASYNC_LOADING": "cmdNoAsyncLoading",
	"NO_MULTI": "cmdNoMulti", "MOVABLE_KEYS": "cmdMovableKeys", "ALLOW_BUSY": "cmdAllowBusy",
	"MAY_REPLICATE": "cmdMayReplicate", "SENTINEL": "cmdSentinel", "ONLY_SENTINEL": "cmdOnlySentinel",
	"PROTECTED": "cmdProtected", "TOUCHES_ARBITRARY_KEYS": "cmdTouchesArbitraryKeys",
}

var aclCats = map[string]string{
	"KEYSPACE": "aclKeyspace", "READ": "aclRead", "WRITE": "aclWrite", "SET": "aclSet",
	"SORTEDSET": "aclSortedSet", "LIST": "aclList", "HASH": "aclHash", "STRING": "aclString",
	"BITMAP": "aclBitmap", "HYPERLOGLOG": "aclHyperLogLog", "GEO": "aclGeo", "STREAM": "aclStream",
	"PUBSUB": "aclPubsub", "ADMIN": "aclAdmin", "FAST": "aclFast", "SLOW": "aclSlow",
	"BLOCKING": "aclBlocking", "DANGEROUS": "aclDangerous", "CONNECTION": "aclConnection",
	"TRANSACTION": "aclTransaction", "SCRIPTING": "aclScripting",
}

var keyFlags = map[string]string{
	"RO": "keyRO", "RW": "keyRW", "OW": "keyOW", "RM": "keyRM", "ACCESS": "keyAccess",
	"UPDATE": "keyUpdate", "INSERT": "keyInsert", "DELETE": "keyDelete", "NOT_KEY": "keyNotKey",
	"INCOMPLETE": "keyIncomplete", "VARIABLE_FLAGS": "keyVariableFlags",
}

var argTypes = map[string]int{"string": 0, "integer": 1, "double": 2, "key": 3, "pattern": 4,
	"unix-time": 5, "pure-token": 6, "oneof": 7, "block": 8}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run gen_commands.go REDIS/src/commands > commands_redis.go")
		os.Exit(2)
	}
	files, err := filepath.Glob(filepath.Join(os.Args[1], "*.json"))
	if err != nil || len(files) == 0 {
		fmt.Fprintln(os.Stderr, "no JSON files in", os.Args[1], err)
		os.Exit(1)
	}
	top := map[string]*jsonCommand{}
	var subs []*jsonCommand
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			panic(err)
		}
		var doc map[string]*jsonCommand
		if err := json.Unmarshal(data, &doc); err != nil {
			panic(fmt.Sprintf("%s: %v", f, err))
		}
		for name, c := range doc {
			c.name = strings.ToLower(name)
			if c.Container != "" {
				c.name = strings.ToLower(c.Container) + "|" + c.name
				subs = append(subs, c)
			} else {
				top[c.name] = c
			}
		}
	}
	for _, s := range subs {
		parent := top[s.name[:strings.IndexByte(s.name, '|')]]
		if parent == nil {
			panic("no container for " + s.name)
		}
		parent.subs = append(parent.subs, s)
	}
	names := make([]string, 0, len(top))
	for n := range top {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	b.WriteString("// Code generated by gen_commands.go from Redis 7.4.1's src/commands/*.json. DO NOT EDIT.\n\n")
	b.WriteString("package server\n\n")
	b.WriteString("var redisCommands = []*cmdMeta{\n")
	for _, n := range names {
		writeCommand(&b, top[n])
		b.WriteString(",\n")
	}
	b.WriteString("}\n")
	out, err := format.Source(b.Bytes())
	if err != nil {
		os.Stdout.Write(b.Bytes())
		panic(err)
	}
	os.Stdout.Write(out)
}

func writeCommand(b *bytes.Buffer, c *jsonCommand) {
	fmt.Fprintf(b, "{name: %q, arity: %d", c.name, c.Arity)
	str := func(field, v string) {
		if v != "" {
			fmt.Fprintf(b, ", %s: %q", field, v)
		}
	}
	str("summary", c.Summary)
	str("since", c.Since)
	str("group", c.Group)
	str("complexity", c.Complexity)
	str("deprecatedSince", c.DeprecatedSince)
	str("replacedBy", c.ReplacedBy)
	if len(c.DocFlags) > 0 {
		var fl []string
		for _, f := range c.DocFlags {
			fl = append(fl, map[string]string{"DEPRECATED": "docDeprecated", "SYSCMD": "docSyscmd"}[f])
		}
		fmt.Fprintf(b, ", docFlags: %s", strings.Join(fl, "|"))
	}
	if len(c.History) > 0 {
		b.WriteString(", history: [][2]string{")
		for _, h := range c.History {
			fmt.Fprintf(b, "{%q, %q}, ", h[0], h[1])
		}
		b.WriteString("}")
	}
	if len(c.CommandTips) > 0 {
		b.WriteString(", tips: []string{")
		for _, t := range c.CommandTips {
			fmt.Fprintf(b, "%q, ", strings.ToLower(t))
		}
		b.WriteString("}")
	}
	flags := bits(c.CommandFlags, cmdFlags)
	if flags != "" {
		fmt.Fprintf(b, ", flags: %s", flags)
	}
	// The categories server.c adds for the flags are added at start
	// (implicitCategories), from these.
	acl := bits(c.ACLCategories, aclCats)
	if acl != "" {
		fmt.Fprintf(b, ", acl: %s", acl)
	}
	if len(c.KeySpecs) > 0 {
		b.WriteString(", keySpecs: []keySpecMeta{")
		for _, ks := range c.KeySpecs {
			b.WriteString("{")
			if ks.Notes != "" {
				fmt.Fprintf(b, "notes: %q, ", ks.Notes)
			}
			if f := bits(ks.Flags, keyFlags); f != "" {
				fmt.Fprintf(b, "flags: %s, ", f)
			}
			switch {
			case ks.BeginSearch.Index != nil:
				fmt.Fprintf(b, "search: searchIndex, pos: %d, ", ks.BeginSearch.Index.Pos)
			case ks.BeginSearch.Keyword != nil:
				fmt.Fprintf(b, "search: searchKeyword, keyword: %q, startFrom: %d, ", ks.BeginSearch.Keyword.Keyword, ks.BeginSearch.Keyword.Startfrom)
			}
			switch {
			case ks.FindKeys.Range != nil:
				r := ks.FindKeys.Range
				fmt.Fprintf(b, "find: findRange, lastKey: %d, keyStep: %d, limit: %d", r.Lastkey, r.Step, r.Limit)
			case ks.FindKeys.Keynum != nil:
				k := ks.FindKeys.Keynum
				fmt.Fprintf(b, "find: findKeynum, keynumIdx: %d, firstKey: %d, keyStep: %d", k.Keynumidx, k.Firstkey, k.Step)
			}
			b.WriteString("}, ")
		}
		b.WriteString("}")
	}
	if len(c.Arguments) > 0 {
		b.WriteString(", args: ")
		writeArgs(b, c.Arguments)
	}
	if len(c.subs) > 0 {
		sort.Slice(c.subs, func(i, j int) bool { return c.subs[i].name < c.subs[j].name })
		b.WriteString(", subs: []*cmdMeta{\n")
		for _, s := range c.subs {
			writeCommand(b, s)
			b.WriteString(",\n")
		}
		b.WriteString("}")
	}
	b.WriteString("}")
}

func writeArgs(b *bytes.Buffer, args []jsonArg) {
	b.WriteString("[]argMeta{")
	for _, a := range args {
		fmt.Fprintf(b, "{name: %q, typ: %d", strings.ToLower(a.Name), argTypes[a.Type])
		if a.Display != "" && a.Type != "oneof" && a.Type != "block" {
			fmt.Fprintf(b, ", display: %q", strings.ToLower(a.Display))
		}
		ks := -1
		if a.KeySpecIndex != nil {
			ks = *a.KeySpecIndex
		}
		fmt.Fprintf(b, ", keySpec: %d", ks)
		if a.Token != "" {
			fmt.Fprintf(b, ", token: %q", strings.ToUpper(a.Token))
		}
		for _, f := range [][2]string{{"summary", a.Summary}, {"since", a.Since}, {"deprecatedSince", a.DeprecatedSince}} {
			if f[1] != "" {
				fmt.Fprintf(b, ", %s: %q", f[0], f[1])
			}
		}
		var fl []string
		if a.Optional {
			fl = append(fl, "argOptional")
		}
		if a.Multiple {
			fl = append(fl, "argMultiple")
		}
		if a.MultipleToken {
			fl = append(fl, "argMultipleToken")
		}
		if len(fl) > 0 {
			fmt.Fprintf(b, ", flags: %s", strings.Join(fl, "|"))
		}
		if len(a.Arguments) > 0 {
			b.WriteString(", args: ")
			writeArgs(b, a.Arguments)
		}
		b.WriteString("}, ")
	}
	b.WriteString("}")
}

func bits(names []string, table map[string]string) string {
	var out []string
	for _, n := range names {
		v, ok := table[n]
		if !ok {
			panic("unknown flag " + n)
		}
		out = append(out, v)
	}
	return strings.Join(out, "|")
}
