"""Drives ohbloom serve with redis-py's RedisBloom commands (r.bf(), r.cf()).

Usage: python3 redispy_check.py HOST PORT PASSWORD
Prints "ok" and exits 0 when every answer is what RedisBloom would give.
"""
import sys

import redis

host, port, password = sys.argv[1], int(sys.argv[2]), sys.argv[3]
r = redis.Redis(host=host, port=port, password=password)


def check(what, got, want):
    if got != want:
        sys.exit(f"{what}: got {got!r}, want {want!r}")


bf = r.bf()
check("BF.RESERVE", bf.create("py", 0.001, 10000), True)
check("BF.ADD new", bf.add("py", "alice|bob"), 1)
check("BF.ADD again", bf.add("py", "alice|bob"), 0)
check("BF.MADD", bf.madd("py", "a", "b", "c"), [1, 1, 1])
check("BF.EXISTS", bf.exists("py", "alice|bob"), 1)
check("BF.MEXISTS", bf.mexists("py", "a", "nope"), [1, 0])
info = bf.info("py")
check("BF.INFO capacity", info.capacity, 10000)
check("BF.INFO items", info.insertedNum, 4)
check("BF.INFO filters", info.filterNum, 1)
check("BF.INSERT", bf.insert("py2", ["x", "y"], capacity=100, error=0.01), [1, 1])
try:
    bf.create("py", 0.01, 10)
    sys.exit("BF.RESERVE of an existing key succeeded")
except redis.ResponseError as e:
    check("BF.RESERVE existing", str(e), "item exists")

# Dump one filter and load it under another name, as RedisBloom's docs show.
chunks, it = [], 0
while True:
    it, data = bf.scandump("py", it)
    if it == 0:
        break
    chunks.append((it, data))
for it, data in chunks:
    bf.loadchunk("copy", it, data)
check("copy EXISTS", bf.mexists("copy", "alice|bob", "a", "b", "c"), [1, 1, 1, 1])

cf = r.cf()
check("CF.RESERVE", cf.create("sessions", 1000), True)
check("CF.ADD", cf.add("sessions", "s1"), 1)
check("CF.ADD twice", cf.add("sessions", "s1"), 1)
check("CF.COUNT", cf.count("sessions", "s1"), 2)
check("CF.DEL", cf.delete("sessions", "s1"), 1)
check("CF.EXISTS", cf.exists("sessions", "s1"), 1)
check("CF.DEL last", cf.delete("sessions", "s1"), 1)
check("CF.EXISTS after", cf.exists("sessions", "s1"), 0)
print("ok")
