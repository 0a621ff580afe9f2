#!/usr/bin/python3
"""Makes testdata/redis<version>-*.rdb and .json with a real redis-server.

Run by hand, not by the tests: /usr/bin/python3 testdata/gen_redis.py [redis-server]
(python3-redis; the server is Debian's redis-server unless given). Debian's
7.0.15 writes RDB version 10; 7.4.1 (built from its source with
`make MALLOC=libc BUILD_TLS=no redis-server`) writes version 12, and is also
given hash fields with TTLs and a single-node cluster. Files:

  redis<version>-lfu.rdb      maxmemory-policy allkeys-lfu (a FREQ before
                              every key), rdbcompression yes, rdbchecksum yes
  redis7.0-lru.rdb            allkeys-lru (an IDLE before every key),
                              rdbcompression no, rdbchecksum no (checksum 0)
  redis7.4-cluster.rdb        cluster mode (SLOT_INFO records, database 0
                              only), allkeys-lru, rdbcompression no

and for each a .json listing every key as the server itself reports it:
database, name (base64), TYPE, OBJECT ENCODING, PEXPIRETIME and DUMP (base64).
"""
import base64, json, os, random, shutil, subprocess, sys, tempfile, time
import redis

PORT = 16479  # outside Linux's ephemeral range
here = os.path.dirname(os.path.abspath(__file__))


def fill(r, version, cluster):
    rnd = random.Random(29)
    r.set("str:short", "hello")
    r.set("str:int", "12345")
    r.set("str:negint", "-70000")
    r.set("str:compressible", "abc" * 100)
    r.set("str:random", bytes(rnd.getrandbits(8) for _ in range(200)))
    r.set("k" * 60, "a key long enough to be compressed")
    r.set(b"bin\x00\xff", b"\x00\x01\x02")
    r.set("str:ttl-ms", "x", px=86_400_000)
    r.set("str:ttl-s", "y", ex=7 * 86_400)
    r.rpush("list:small", "a", "b", 1, 2, 3)
    r.rpush("list:big", *[f"element-{i}-" + "z" * 40 for i in range(600)])
    r.rpush("list:huge-element", "h" * 20000, "tail")
    r.sadd("set:ints", *range(100))
    r.sadd("set:strings", *[f"member-{i}" for i in range(200)])
    r.sadd("set:small-strings", "x", "y", "z")
    r.zadd("zset:small", {"a": 1.5, "b": -2, "c": 3e100})
    r.zadd("zset:big", {f"m{i}": i / 7 for i in range(200)})
    r.zadd("zset:inf", {"pinf": float("inf"), "ninf": float("-inf")})
    r.hset("hash:small", mapping={"f1": "v1", "f2": 2})
    # A value past hash-max-listpack-value (64) makes a hashtable of few fields.
    r.hset("hash:big", mapping={f"field-{i}": "v" * (i % 50) for i in range(200)} | {"long": "x" * 100})
    r.hset("hash:long-value", mapping={"f": "L" * 200})
    r.expire("hash:big", 3600)
    for i in range(200):
        r.xadd("stream:groups", {"n": i, "s": "payload" * (i % 5)}, id=f"{1000 + i}-0")
    r.xgroup_create("stream:groups", "g1", id="0")
    r.xgroup_create("stream:groups", "g2", id="$")
    r.xreadgroup("g1", "alice", {"stream:groups": ">"}, count=10)
    r.xreadgroup("g1", "bob", {"stream:groups": ">"}, count=5)
    r.xack("stream:groups", "g1", "1000-0", "1001-0")
    r.xdel("stream:groups", "1100-0", "1101-0")
    r.xadd("stream:plain", {"a": "b"})
    r.function_load("#!lua name=rdbtestlib\nredis.register_function('rdbtest', function() return 1 end)")
    if version >= (7, 4):
        r.hset("hash:small-ttl", mapping={"f1": "v1", "f2": "v2", "f3": "v3"})
        r.execute_command("HEXPIRE", "hash:small-ttl", 86400, "FIELDS", 2, "f1", "f3")
        r.hset("hash:big-ttl", mapping={f"field-{i}": "w" * (i % 30) for i in range(200)} | {"long": "y" * 100})
        r.execute_command("HPEXPIRE", "hash:big-ttl", 5 * 86_400_000, "FIELDS", 3, "field-1", "field-2", "field-150")
        r.execute_command("HEXPIRE", "hash:big-ttl", 9 * 86400, "FIELDS", 1, "field-7")
    if cluster:
        return
    r.select(5)
    r.set("db5:string", "five")
    r.lpush("db5:list", "x")
    r.select(15)
    r.set("db15:string", "fifteen", px=123_456_789)


def listing(r, cluster):
    keys = []
    for db in [0] if cluster else range(16):
        r.select(db)
        for k in sorted(r.scan_iter(count=1000)):
            keys.append({
                "db": db,
                "key": base64.b64encode(k).decode(),
                "type": r.type(k).decode(),
                "encoding": r.object("encoding", k).decode(),
                "pexpiretime": r.execute_command("PEXPIRETIME", k),
                "dump": base64.b64encode(r.dump(k)).decode(),
            })
    return keys


def make(server, version, name, flags, cluster=False):
    tmp = tempfile.mkdtemp()
    args = [server, "--port", str(PORT), "--dir", tmp, "--save", "", "--appendonly", "no",
            "--list-compress-depth", "1"] + flags
    if cluster:
        args += ["--cluster-enabled", "yes", "--cluster-config-file", os.path.join(tmp, "nodes.conf")]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    try:
        r = redis.Redis(port=PORT)
        for _ in range(100):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        if cluster:
            r.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
            while b"cluster_state:ok" not in r.execute_command("CLUSTER", "INFO"):
                time.sleep(0.05)
        fill(r, tuple(int(x) for x in version.split(".")[:2]), cluster)
        keys = listing(r, cluster)
        r.save()
        base = os.path.join(here, f"redis{'.'.join(version.split('.')[:2])}-{name}")
        shutil.copy(os.path.join(tmp, "dump.rdb"), base + ".rdb")
        with open(base + ".json", "w") as f:
            json.dump({"made_by": f"redis-server {version} {' '.join(flags)}" + (" cluster" if cluster else ""),
                       "keys": keys}, f, indent=1)
            f.write("\n")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp)


def main():
    server = sys.argv[1] if len(sys.argv) > 1 else "redis-server"
    version = subprocess.run([server, "--version"], capture_output=True, text=True).stdout.split()[2][2:]
    make(server, version, "lfu", ["--maxmemory-policy", "allkeys-lfu", "--rdbcompression", "yes", "--rdbchecksum", "yes"])
    if version.startswith("7.0."):
        make(server, version, "lru", ["--maxmemory-policy", "allkeys-lru", "--rdbcompression", "no", "--rdbchecksum", "no"])
    else:
        make(server, version, "cluster", ["--maxmemory-policy", "allkeys-lru", "--rdbcompression", "no"], cluster=True)


if __name__ == "__main__":
    sys.exit(main())
