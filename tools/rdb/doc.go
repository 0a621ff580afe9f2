// Package rdb reads Redis RDB files and DUMP payloads, and decodes and
// encodes the values of RedisBloom's two module types, so that a Bloom or
// cuckoo filter can move between RedisBloom and ohbloom byte for byte.
//
// Reader reads an RDB file of versions 9 to 12 (Redis 5.0 to 7.4) as a
// stream, key by key: each Entry has its database, expiry, LRU/LFU data,
// type and, when asked for (by default for RedisBloom's filters only), its
// value's encoding as the file holds it. Every other value is delimited
// without being built and skipped as it streams by, counted by type.
// Every length and count read is checked against the bytes left when the
// input's size is known, and whatever is kept grows as bytes arrive, so
// that a length that merely claims much never allocates much. At the end
// the file's CRC-64 is checked; any fault is an *Error naming the byte
// offset.
//
// ParsePayload checks a DUMP payload (value, RDB version, CRC-64) as
// RESTORE does; AppendPayload frames a value as DUMP does, with the RDB
// version of Redis 7.4.
//
// DecodeBloom and DecodeCuckoo decode the module values of types MBbloom--
// (a scalable Bloom chain) and MBbloomCF (a cuckoo filter) as RedisBloom
// 2.8's rdb_load callbacks read them, into Bloom and Cuckoo: plain structs
// of the fields RedisBloom saves and the filters' raw bytes. Their
// AppendValue and DumpPayload methods give back exactly the bytes
// RedisBloom 2.8 in Redis 7.4 writes, including Redis's choice of integer
// and LZF encodings for each string. ScanDump converts a filter to the
// chunks BF.SCANDUMP or CF.SCANDUMP gives for it, and BloomFromScanDump
// and CuckooFromScanDump convert such chunks back.
//
// Wiring: RESTORE of a RedisBloom payload is ParsePayload, ModuleOf to
// pick the decoder, Decode*, then for a Bloom filter ScanDump into the
// server's LOADCHUNK path, for a cuckoo filter SplitModuleValue into
// redisbloom.CuckooFilter.UnmarshalRDB (a cuckoo filter without items has
// no SCANDUMP); DUMP of a RedisBloom-format key is BloomFromScanDump of its
// chunks, or DecodeCuckoo of AppendModuleValue of its MarshalRDB, then
// DumpPayload. An RDB import is NewReader and Next, and the same decoders
// for each kept Entry.Value.
//
// docs/format.md describes the formats as implemented, with links to the
// Redis and RedisBloom sources they follow.
package rdb
