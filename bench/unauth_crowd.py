#!/usr/bin/env python3
"""Measures what a crowd of clients that never authenticate makes
"ohbloom serve --requirepass" hold: N connections each send a request of
10 arguments of 16,000 bytes (Redis's limits before AUTH) with the last
argument unfinished, and stay. Prints the server's RSS and peak RSS
(VmRSS, VmHWM) and how long an AUTH and a PING from one more client
take. Extra arguments go to "ohbloom serve", e.g. to compare with the
budget for such clients as large as the whole buffer budget:

    go build -o /tmp/ohbloom ./tools/cmd/ohbloom
    ulimit -n 20000
    python3 bench/unauth_crowd.py /tmp/ohbloom 3000 7701
    python3 bench/unauth_crowd.py /tmp/ohbloom 3000 7702 --max-unauth-buffered-bytes 536870912

It times nothing that needs a quiet machine.
"""
import socket
import subprocess
import sys
import time


def status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                out[line.split(":")[0]] = f"{int(line.split()[1]) // 1024} MB"
    return out


def main():
    binary, n, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    server = subprocess.Popen([binary, "serve", "--addr", f"127.0.0.1:{port}", "--requirepass", "secret"] + sys.argv[4:],
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):  # until it listens
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.05)
        arg = b"$16000\r\n" + b"x" * 16000 + b"\r\n"
        payload = b"*10\r\n" + arg * 9 + b"$16000\r\n" + b"x" * 8000
        crowd = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port))
            s.setblocking(False)
            try:
                s.send(payload)
            except BlockingIOError:
                pass
            crowd.append(s)
        time.sleep(3)  # let the server read what the kernel holds
        print(f"{n} unauthenticated connections:", status(server.pid))
        c = socket.create_connection(("127.0.0.1", port))
        start = time.monotonic()
        c.sendall(b"AUTH secret\r\nPING\r\n")
        got = b""
        while not got.endswith(b"+PONG\r\n"):
            got += c.recv(100)
        print(f"AUTH and PING answered in {(time.monotonic() - start) * 1000:.1f} ms:", got)
    finally:
        server.kill()


if __name__ == "__main__":
    main()
