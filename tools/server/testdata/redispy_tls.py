"""Drives ohbloom serve with redis-py over TLS or a Unix socket.

Usage: python3 redispy_tls.py PASSWORD tls HOST PORT CA_FILE [CERT_FILE KEY_FILE]
       python3 redispy_tls.py PASSWORD unix PATH
Prints "ok" and exits 0 when every answer is right.
"""
import sys

import redis

password, mode = sys.argv[1], sys.argv[2]
if mode == "tls":
    host, port, ca = sys.argv[3], int(sys.argv[4]), sys.argv[5]
    cert, key = (sys.argv[6], sys.argv[7]) if len(sys.argv) > 7 else (None, None)
    r = redis.Redis(host=host, port=port, password=password, ssl=True, ssl_ca_certs=ca,
                    ssl_certfile=cert, ssl_keyfile=key, ssl_cert_reqs="required")
else:
    r = redis.Redis(unix_socket_path=sys.argv[3], password=password)


def check(what, got, want):
    if got != want:
        sys.exit(f"{what}: got {got!r}, want {want!r}")


bf = r.bf()
check("BF.ADD new", bf.add("py-" + mode, "alice|bob"), 1)
check("BF.ADD again", bf.add("py-" + mode, "alice|bob"), 0)
check("BF.MEXISTS", bf.mexists("py-" + mode, "alice|bob", "nope"), [1, 0])
pipe = r.pipeline(transaction=True)
pipe.execute_command("BF.ADD", "py-" + mode, "carol")
pipe.execute_command("BF.EXISTS", "py-" + mode, "carol")
check("MULTI/EXEC", pipe.execute(), [1, 1])
print("ok")
