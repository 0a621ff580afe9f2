#!/usr/bin/env bash
# Fuzz every decoder of outside bytes (and a few other targets) for a
# budget of executions. .ci/run calls it as is, a few seconds a target, to
# catch what a change breaks. Before a release, or after touching a
# decoder, run it longer by hand: FUZZ_SCALE=20 .ci/fuzz.sh multiplies
# every budget by 20 (about 40 minutes on 2 cores). A failing input is
# written under the package's testdata/fuzz/ and then runs with the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${FUZZ_SCALE:-1}
case $scale in ''|*[!0-9]*|0) echo "FUZZ_SCALE must be a positive integer, not '$scale'" >&2; exit 2;; esac

# fuzz <package> <target> <executions>
fuzz() {
  go test -run '^$' -fuzz "^$2\$" -fuzztime "$(($3 * scale))x" "$1"
}

# CI fuzzes each target for a few seconds, to catch what a change breaks;
# the long runs are done by hand (FUZZ_SCALE, above).
# Budgets are counts of executions, not durations: with -fuzztime 8s, Go
# 1.26's fuzz coordinator can report "context deadline exceeded" as a
# failure when the deadline races a worker's last input (golang/go#75804,
# fixed in Go 1.27); a count has no deadline to race. Here the decoders run
# 50-70k inputs a second and the server 14k.
for target in FuzzUnmarshalBinary FuzzReadFrom FuzzUnmarshalCounting FuzzReadScalable FuzzInspect; do
  fuzz . "$target" 100000
done
fuzz ./classic FuzzRead 100000
for target in FuzzHeader FuzzUnmarshal; do
  fuzz ./redisbloom "$target" 100000
done
# RedisBloom's cuckoo filter: header and data chunks, the MBbloomCF RDB
# value, and (not a decoder) operations held to the transliterated C code.
# Each input here costs up to a 64 KiB filter's round trips: 4-40k a second.
fuzz ./redisbloom FuzzCuckooHeader 50000
fuzz ./redisbloom FuzzCuckooUnmarshalRDB 100000
fuzz ./redisbloom FuzzCuckooReference 100000
# Not a decoder, but the assembly that hashes every key a caller hands to
# Test and Add, held to zeebo/xxh3 on any bytes.
fuzz . FuzzKeyHash 100000
fuzz ./tools/server FuzzExec 50000
fuzz ./tools/server FuzzLogReplay 100000
fuzz ./tools/server FuzzKeyRecord 100000
fuzz ./tools/server FuzzCuckooRecord 50000
fuzz ./tools/server FuzzManifest 100000
fuzz ./tools/server FuzzRecord 100000
fuzz ./tools/server FuzzGlob 50000
# RESTORE's payloads, framed with a right checksum or not: 8-20k a second.
fuzz ./tools/server FuzzRestore 50000
# Configuration and ACL files, read at start and by ACL LOAD: 5-15k inputs
# a second here.
fuzz ./tools/server FuzzConfigFile 50000
fuzz ./tools/server FuzzACLFile 50000
fuzz ./tools/redisfilter FuzzParseMeta 100000
# RDB files, DUMP payloads, RedisBloom's module values and SCANDUMP chunks,
# LZF: 15-40k inputs a second here.
for target in FuzzReader FuzzParsePayload FuzzDecodeBloom FuzzDecodeCuckoo FuzzScanDumpChunks FuzzLZF FuzzDecodeBlobValue; do
  fuzz ./tools/rdb "$target" 100000
done
# Over real sockets: some 2,000 inputs a second here.
fuzz ./tools/server FuzzConnection 20000
# The first bytes a TLS or plaintext listener gets (a plaintext client on
# the TLS port, a ClientHello on the plaintext one): 1,000-2,500 a second.
fuzz ./tools/server FuzzTLSFirstBytes 10000

