#!/usr/bin/env python3
"""A lax upstream on the host's loopback for the smuggling tests: it reads HTTP/1.1 the way
careless servers do, so that what the gateway lets through to it shows.

  lax_upstream.py --log FILE

Prints its port on stdout once it listens, then serves until killed. Lax in three ways:
  - GET, HEAD, OPTIONS and TRACE bodies are never read, nor a POST's to a path ending in
    "/static": their bytes are taken for the next request on the connection (other
    requests' Content-Length bodies are read), and Connection: close is ignored (a line
    that is no request line ends the connection);
  - path parameters are stripped from every segment and dot segments resolved after that
    (as Tomcat does): "/v1/..;/admin/x" is served as "/admin/x";
  - an Upgrade of any kind is taken (101, the same token), and so is a request to a path
    ending in "/switch" without one (101, "Upgrade: h2c"); after a 101 the bytes that follow
    are read as more HTTP/1.1 requests, each logged with "upgraded": true.
Every request is one JSON line of the log: conn (the connection's number), method, path
(as served), target (as sent), connection and upgrade (those fields, or null), upgraded. Every answer is 200 with a short JSON body,
keep-alive, whatever Connection says.
"""
import json, socket, sys, threading


def serve(conn, number, log):
    f = conn.makefile("rb")
    upgraded = False
    try:
        while True:
            line = f.readline()
            if not line:
                return
            if line in (b"\r\n", b"\n"):
                continue
            parts = line.decode("latin-1").split()
            if len(parts) < 2:
                return
            method, target = parts[0], parts[1]
            headers = {}
            while True:
                h = f.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                name, _, value = h.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            if method not in ("GET", "HEAD", "OPTIONS", "TRACE") and not target.endswith("/static"):
                n = int(headers.get("content-length") or 0)
                if n:
                    f.read(n)
            path = target.split("?")[0]
            if "://" in path:  # absolute-form, as a proxy would get it
                path = "/" + path.split("://", 1)[1].partition("/")[2]
            out = []
            for segment in path.split("/")[1:]:
                segment = segment.split(";")[0]
                if segment == "..":
                    if out:
                        out.pop()
                elif segment != ".":
                    out.append(segment)
            served = "/" + "/".join(out)
            with open(log, "a") as lf:
                lf.write(json.dumps({"conn": number, "method": method, "path": served,
                                     "target": target, "connection": headers.get("connection"),
                                     "upgrade": headers.get("upgrade"),
                                     "upgraded": upgraded}) + "\n")
            if not upgraded and ("upgrade" in headers or served.endswith("/switch")):
                token = headers.get("upgrade", "h2c")
                conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                             b"Upgrade: %s\r\n\r\n" % token.encode("latin-1"))
                upgraded = True
                continue
            body = json.dumps({"method": method, "path": served}).encode() + b"\n"
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    except OSError:
        pass
    finally:
        conn.close()


def main():
    log = sys.argv[sys.argv.index("--log") + 1]
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    print(s.getsockname()[1], flush=True)
    sys.stdout.close()
    number = 0
    while True:
        c, _ = s.accept()
        number += 1
        threading.Thread(target=serve, args=(c, number, log), daemon=True).start()


if __name__ == "__main__":
    main()
