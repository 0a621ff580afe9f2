"""Every BF.* and CF.* command and error of RedisBloom's docs through redis-py
(Debian's python3-redis 4.3, which speaks RESP2 only), and a RedisBloom dump
loaded with it.

Usage: python3 redispy_compat.py HOST PORT DUMP.json
Prints "ok" and exits 0 when every answer is what RedisBloom gives.
"""
import base64
import json
import re
import sys

import redis

host, port, dump = sys.argv[1], int(sys.argv[2]), sys.argv[3]
r = redis.Redis(host=host, port=port)
# A client without r.bf()'s reply parsers, for replies they do not expect
# (BF.INFO of one field: RedisBloom's reply breaks redis-py 4.3's parser).
raw = redis.Redis(host=host, port=port)


def check(what, got, want):
    if got != want:
        sys.exit(f"{what}: got {got!r}, want {want!r}")


def error(what, fn, want):
    try:
        got = fn()
    except redis.ResponseError as e:
        check(what, str(e), want)
        return
    sys.exit(f"{what}: answered {got!r}, want the error {want!r}")


bf, cf = r.bf(), r.cf()

# BF.RESERVE with every option redis-py sends.
check("BF.RESERVE", bf.create("b", 0.01, 1000), True)
check("BF.RESERVE EXPANSION 4", bf.create("b4", 0.01, 100, expansion=4), True)
check("BF.RESERVE NONSCALING", bf.create("bn", 0.01, 2, noScale=True), True)
check("BF.INFO EXPANSION", bf.info("b4").expansionRate, 4)
check("BF.INFO NONSCALING", bf.info("bn").expansionRate, None)
error("BF.RESERVE existing", lambda: bf.create("b", 0.01, 10), "item exists")
error("BF.RESERVE bad rate", lambda: bf.create("x", "abc", 10), "bad error rate")
error("BF.RESERVE rate range", lambda: bf.create("x", 1, 10), "error rate must be in the range (0.000000, 1.000000)")
error("BF.RESERVE bad capacity", lambda: bf.create("x", 0.01, "ten"), "bad capacity")
error("BF.RESERVE capacity range", lambda: bf.create("x", 0.01, 0), "capacity must be in the range [1, 1073741824]")
error("BF.RESERVE expansion range", lambda: bf.create("x", 0.01, 10, expansion=40000), "expansion must be in the range [0, 32768]")
error("BF.RESERVE NONSCALING EXPANSION", lambda: bf.create("x", 0.01, 10, expansion=2, noScale=True), "Nonscaling filters cannot expand")
error("BF.RESERVE no expansion", lambda: r.execute_command("BF.RESERVE", "x", 0.01, 10, "EXPANSION"), "no expansion")
error("BF.RESERVE bad expansion", lambda: r.execute_command("BF.RESERVE", "x", 0.01, 10, "EXPANSION", "y"), "bad expansion")

# Adds and tests.
check("BF.ADD", bf.add("b", "a"), 1)
check("BF.ADD again", bf.add("b", "a"), 0)
check("BF.MADD", bf.madd("b", "a", "b", "c"), [0, 1, 1])
check("BF.EXISTS", bf.exists("b", "a"), 1)
check("BF.EXISTS absent", bf.exists("b", "zz"), 0)
check("BF.EXISTS missing key", bf.exists("nokey", "a"), 0)
check("BF.MEXISTS", bf.mexists("b", "a", "zz"), [1, 0])
check("BF.INSERT options", bf.insert("bi", ["x", "y"], capacity=50, error=0.001, expansion=3), [1, 1])
check("BF.INFO after INSERT", (bf.info("bi").capacity, bf.info("bi").expansionRate), (50, 3))
check("BF.INSERT NONSCALING EXPANSION 0", bf.insert("bz", ["x"], expansion=0, noScale=True), [1])
check("BF.INSERT NOCREATE", bf.insert("b", ["d"], noCreate=True), [1])
error("BF.INSERT NOCREATE missing", lambda: bf.insert("nokey", ["d"], noCreate=True), "not found")
error("BF.INSERT bad capacity", lambda: bf.insert("x", ["d"], capacity=0), "Bad capacity")
error("BF.INSERT bad error", lambda: bf.insert("x", ["d"], error=2), "Bad error rate")
error("BF.INSERT bad expansion", lambda: bf.insert("x", ["d"], expansion=-1), "Bad expansion")
error("BF.INSERT unknown", lambda: r.execute_command("BF.INSERT", "x", "FOO", "ITEMS", "a"), "Unknown argument received")
check("BF.MADD full", bf.madd("bn", "a", "b"), [1, 1])
error("BF.ADD full", lambda: bf.add("bn", "c"), "non scaling filter is full")
check("BF.CARD", r.execute_command("BF.CARD", "b"), 4)
info = bf.info("b")
check("BF.INFO", (info.capacity, info.filterNum, info.insertedNum, info.expansionRate), (1000, 1, 4, 2))
check("BF.INFO CAPACITY", raw.execute_command("BF.INFO", "b", "CAPACITY"), [1000])
check("BF.INFO EXPANSION of NONSCALING", raw.execute_command("BF.INFO", "bn", "EXPANSION"), [None])
error("BF.INFO field", lambda: r.execute_command("BF.INFO", "b", "COLOR"), "Invalid information value")
error("BF.INFO missing", lambda: bf.info("nokey"), "not found")
error("BF.ADD arity", lambda: r.execute_command("BF.ADD", "b"), "wrong number of arguments for 'bf.add' command")

# A transaction, redis-py's default pipeline.
p = r.pipeline()
p.execute_command("BF.ADD", "b", "tx")
p.execute_command("BF.EXISTS", "b", "tx")
p.execute_command("CF.ADD", "cp", "tx")
check("MULTI/EXEC", p.execute(), [1, 1, 1])

# An ohbloom filter dumped and loaded under another name.
it, chunks = 0, []
while True:
    it, data = bf.scandump("b", it)
    if it == 0:
        break
    chunks.append((it, data))
for it, data in chunks:
    check("BF.LOADCHUNK", bf.loadchunk("copy", it, data), b"OK")
check("copy", bf.mexists("copy", "a", "b", "c", "d", "zz"), [1, 1, 1, 1, 0])
error("BF.SCANDUMP iterator", lambda: r.execute_command("BF.SCANDUMP", "b", "x"), "Second argument must be numeric")
error("BF.LOADCHUNK iterator", lambda: r.execute_command("BF.LOADCHUNK", "b", "x", "y"), "Second argument must be numeric")

# A RedisBloom dump: its chunks load, it answers RedisBloom's false
# positives, and dumps back the same chunks.
g = json.load(open(dump))
for c in g["chunks"]:
    check("BF.LOADCHUNK RedisBloom", bf.loadchunk("rb", c["iterator"], base64.b64decode(c["data"])), b"OK")
m = re.match(r"^'([^']*)' \+ decimal i for i < (\d+)", g["absent_probes"])
probes = [m.group(1) + str(i) for i in range(int(m.group(2)))]
got = bf.mexists("rb", *probes)
check("RedisBloom false positives", [i for i, v in enumerate(got) if v], g["absent_probes_positive"])
info = bf.info("rb")
check("RedisBloom BF.INFO", [info.capacity, info.size, info.filterNum, info.insertedNum, info.expansionRate],
      [g["info"][k] for k in ("Capacity", "Size", "Number of filters", "Number of items inserted", "Expansion rate")])
it, back = 0, []
while True:
    it, data = bf.scandump("rb", it)
    if it == 0:
        break
    back.append({"iterator": it, "data": base64.b64encode(data).decode()})
check("RedisBloom dump back", back, g["chunks"])

# CF.*
check("CF.RESERVE", cf.create("c", 1000, expansion=1, bucket_size=4, max_iterations=20), True)
error("CF.RESERVE existing", lambda: cf.create("c", 1000), "item exists")
error("CF.RESERVE capacity", lambda: cf.create("c2", 3), "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]")
error("CF.RESERVE bucket size", lambda: cf.create("c2", 100, bucket_size=0), "BUCKETSIZE: value must be in the range [1, 255]")
error("CF.RESERVE max iterations", lambda: cf.create("c2", 100, max_iterations=0), "MAXITERATIONS: value must be in the range [1, 65535]")
error("CF.RESERVE bad capacity", lambda: cf.create("c2", "x"), "Bad capacity")
check("CF.ADD", cf.add("c", "x"), 1)
check("CF.ADDNX", cf.addnx("c", "x"), 0)
check("CF.INSERT", cf.insert("c", ["y", "x"]), [1, 1])
check("CF.INSERTNX", cf.insertnx("c", ["y", "z"]), [0, 1])
check("CF.INSERT CAPACITY", cf.insert("c3", ["y"], capacity=100), [1])
error("CF.INSERT NOCREATE", lambda: cf.insert("c4", ["y"], nocreate=True), "not found")
error("CF.INSERT capacity", lambda: cf.insert("c4", ["y"], capacity=3), "Capacity must be in the range [cf-bucket-size * 2, 1073741824]")
check("CF.EXISTS", cf.exists("c", "x"), 1)
check("CF.MEXISTS", cf.mexists("c", "x", "q"), [1, 0])
check("CF.COUNT", cf.count("c", "x"), 2)
check("CF.DEL", cf.delete("c", "x"), 1)
check("CF.DEL absent", cf.delete("c", "q"), 0)
error("CF.DEL missing", lambda: cf.delete("nokey", "x"), "Not found")
ci = cf.info("c")
check("CF.INFO", (ci.insertedNum, ci.deletedNum, ci.filterNum), (3, 1, 1))
error("CF.ADD wrong type", lambda: cf.add("b", "x"), "WRONGTYPE Operation against a key holding the wrong kind of value")
check("BF.EXISTS on a CF key", bf.exists("c", "x"), 0)
it, chunks = 0, []
while True:
    it, data = cf.scandump("c", it)
    if it == 0:
        break
    chunks.append((it, data))
for it, data in chunks:
    check("CF.LOADCHUNK", cf.loadchunk("ccopy", it, data), b"OK")
check("CF copy", cf.count("ccopy", "y"), 1)
print("ok")
