package rdb

// AppendBlobValue appends a TypeModule2 value of module type id holding
// one string item, blob, and its end: the encoding of a module type whose
// value is one opaque byte string, as ohbloom's own keys dump. The string
// is written as its length and bytes, never compressed, so a blob of n
// bytes takes n plus at most 21 bytes. A payload of it is
// AppendPayload(dst, TypeModule2, AppendBlobValue(nil, id, blob)); Redis
// without a module of type id refuses to RESTORE it ("Bad data format"),
// and ParsePayload accepts it, as any well-formed module value.
func AppendBlobValue(dst []byte, id ModuleID, blob []byte) []byte {
	dst = appendLen(dst, uint64(id))
	dst = append(dst, moduleString)
	dst = appendLen(dst, uint64(len(blob)))
	dst = append(dst, blob...)
	return append(dst, moduleEOF)
}

// DecodeBlobValue returns the string of a value AppendBlobValue made with
// module type id (any encoding version up to id's) and checks that nothing
// else is in it. The string aliases value unless it was compressed.
func DecodeBlobValue(value []byte, id ModuleID) ([]byte, error) {
	c := cursor{b: value}
	got, err := c.number("module type ID")
	if err != nil {
		return nil, err
	}
	if ModuleID(got).Name() != id.Name() {
		return nil, c.err(0, ErrCorrupt, "module type %s, not %s", ModuleID(got).Name(), id.Name())
	}
	if v := ModuleID(got).EncVer(); v > id.EncVer() {
		return nil, c.err(0, ErrUnsupported, "%s encoding version %d, newer than %d", id.Name(), v, id.EncVer())
	}
	if err := c.opcode(moduleString, "blob"); err != nil {
		return nil, err
	}
	blob, err := c.str("blob")
	if err != nil {
		return nil, err
	}
	if err := c.end(); err != nil {
		return nil, err
	}
	return blob, nil
}

// SplitModuleValue splits a TypeModule2 value into its module type ID and
// the module items after it, through the closing EOF opcode: what the
// module's rdb_load callback reads, and what RedisBloom's own decoders in
// package redisbloom (CuckooFilter.UnmarshalRDB) take.
func SplitModuleValue(value []byte) (ModuleID, []byte, error) {
	c := cursor{b: value}
	id, err := c.number("module type ID")
	if err != nil {
		return 0, nil, err
	}
	return ModuleID(id), value[c.pos:], nil
}

// AppendModuleValue appends the TypeModule2 value of module type id whose
// items, through their closing EOF opcode, are items: the inverse of
// SplitModuleValue, for a value a module's rdb_save made (as
// redisbloom.CuckooFilter.MarshalRDB).
func AppendModuleValue(dst []byte, id ModuleID, items []byte) []byte {
	return append(appendLen(dst, uint64(id)), items...)
}
