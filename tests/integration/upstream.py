#!/usr/bin/env python3
"""A test upstream on the host's loopback for the gateway tests: HTTP/1.1 (keep-alive),
optionally TLS. Prints its port on stdout once it listens, then serves until killed.

  upstream.py [--tls CERT KEY] [--log FILE] [--git ROOT]

Paths:
  /slow        answers once /slow/release was asked (a slow upstream must not stall
               other connections), 504 after 60 s without
  /big/N       N bytes of body
  /status/N    status N, empty body
  .../ws       with Upgrade: websocket, 101, then echoes every byte
  /git/...     with --git: git's smart HTTP protocol for the repositories under ROOT
               (git http-backend), so that clone and push work
  /reflect/... what careless or debugging upstreams do with what they are sent (the
               credential reflection tests):
    cors         Access-Control-Allow-Origin: the request's Origin (and -Allow-Headers)
    request-id   X-Request-Id: the request's X-Request-Id
    error        400, an HTML page quoting every field of the request
    chunked      the request's fields in a chunked body, 7 bytes a chunk, in three writes
    trailer      a chunked body with trailer fields echoing Authorization and X-Api-Key
    header-name  a response field named after the Authorization value (X-Seen-VALUE: 1)
    partial      the Authorization value without its last byte, at the end of the body
    base64       the request's fields, base64 (standard) then base64 (URL-safe)
    location     302 to /login?next= the Authorization value, %-encoded
    until-close  the fields in a body that ends when the connection does (no length)
    gzip         the fields, gzip-encoded when Accept-Encoding allows gzip, else as they are
    gzip-always  the fields gzip-encoded whatever the request accepts
  anything     a JSON echo: method, path, the request's header names and values, body size
Every request is appended to the log as one JSON line (method, path, headers, body_len, and
the body itself as text when it is under 4 KiB).
"""
import base64, gzip, json, socket, ssl, subprocess, sys, threading, time, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SLOW_RELEASE = threading.Event()  # /slow answers once it is set


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_file = None
    git_root = None

    def log_message(self, fmt, *args):
        pass

    def _record(self, body_len, body=b""):
        if Handler.log_file:
            line = {"method": self.command, "path": self.path,
                    "headers": dict(self.headers.items()), "body_len": body_len}
            if body and len(body) < 4096:
                line["body"] = body.decode("utf-8", "replace")
            with open(Handler.log_file, "a") as f:
                f.write(json.dumps(line) + "\n")

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        data = b""
        while len(data) < n:
            chunk = self.rfile.read(min(65536, n - len(data)))
            if not chunk:
                break
            data += chunk
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
        return data

    def _send(self, status, body, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _git(self, body):
        """git's smart HTTP protocol: git http-backend as a CGI program."""
        path, _, query = self.path[len("/git"):].partition("?")
        env = {"GIT_PROJECT_ROOT": Handler.git_root, "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": self.command,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": "test", "REMOTE_ADDR": "127.0.0.1",
               "PATH": "/usr/bin:/bin", "HOME": "/nonexistent",
               "GIT_CONFIG_NOSYSTEM": "1"}
        if self.headers.get("Content-Encoding") == "gzip":
            env["HTTP_CONTENT_ENCODING"] = "gzip"
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(": ")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)

    def _fields(self):
        return "".join("%s: %s\n" % (k, v) for k, v in self.headers.items()).encode()

    def _reflect(self, what):
        fields = self._fields()
        auth = self.headers.get("Authorization", "")
        if what == "cors":
            self.send_response(200)
            self.send_header("Access-Control-Allow-Origin", self.headers.get("Origin", "*"))
            self.send_header("Access-Control-Allow-Headers",
                             self.headers.get("Access-Control-Request-Headers", ""))
            self.send_header("Content-Length", "3")
            self.end_headers()
            self.wfile.write(b"ok\n")
        elif what == "request-id":
            self.send_response(200)
            self.send_header("X-Request-Id", self.headers.get("X-Request-Id", "none"))
            self.send_header("Content-Length", "3")
            self.end_headers()
            self.wfile.write(b"ok\n")
        elif what == "error":
            page = b"<html><body><h1>400 Bad Request</h1><p>We got:</p><pre>\n" + fields + \
                   b"</pre></body></html>\n"
            self._send(400, page, "text/html")
        elif what in ("chunked", "trailer"):
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            if what == "trailer":
                self.send_header("Trailer", "X-Echo-Authorization, X-Echo-Api-Key")
            self.end_headers()
            chunks = [fields[i:i + 7] for i in range(0, len(fields), 7)]
            third = max(1, len(chunks) // 3)
            for part in (chunks[:third], chunks[third:2 * third], chunks[2 * third:]):
                self.wfile.write(b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in part))
                self.wfile.flush()
                time.sleep(0.02)  # (separate reads at the gateway, most of the time)
            if what == "trailer":
                self.wfile.write(b"0\r\nX-Echo-Authorization: %s\r\nX-Echo-Api-Key: %s\r\n\r\n" % (
                    auth.encode(), self.headers.get("X-Api-Key", "").encode()))
            else:
                self.wfile.write(b"0\r\n\r\n")
        elif what == "header-name":
            self.send_response(200)
            self.send_header("X-Seen-" + auth.replace("Bearer ", ""), "1")
            self.send_header("Content-Length", "3")
            self.end_headers()
            self.wfile.write(b"ok\n")
        elif what == "partial":
            self._send(200, b"you sent a token ending in: " + auth.encode()[:-1], "text/plain")
        elif what == "base64":
            self._send(200, base64.b64encode(fields) + b"\n" + base64.urlsafe_b64encode(fields) + b"\n",
                       "text/plain")
        elif what == "location":
            self.send_response(302)
            self.send_header("Location", "/login?next=" + urllib.parse.quote(auth, safe=""))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif what == "until-close":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(fields)
            self.close_connection = True
        elif what in ("gzip", "gzip-always"):
            if what == "gzip-always" or "gzip" in self.headers.get("Accept-Encoding", ""):
                data = gzip.compress(fields)
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            else:
                self._send(200, fields, "text/plain")
        else:
            self._send(404, b"no such reflection\n", "text/plain")

    def _handle(self):
        body = self._body()
        self._record(len(body), body)
        if Handler.git_root and self.path.startswith("/git/"):
            return self._git(body)
        if self.path.startswith("/reflect/"):
            return self._reflect(self.path[len("/reflect/"):].split("?")[0])
        if self.path.endswith("/ws") and self.headers.get("Upgrade", "").lower() == "websocket":
            # Not a real WebSocket: after the 101, every byte comes back (enough to see the
            # gateway pass the upgraded connection through).
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.end_headers()
            self.wfile.flush()
            while True:
                data = self.connection.recv(65536)
                if not data:
                    break
                self.connection.sendall(data)
            self.close_connection = True
        elif self.path == "/slow":
            # held until /slow/release (or 60 s): nothing else may wait for it
            released = SLOW_RELEASE.wait(60)
            self._send(200 if released else 504, b"slow\n", "text/plain")
        elif self.path == "/slow/release":
            SLOW_RELEASE.set()
            self._send(200, b"released\n", "text/plain")
        elif self.path.startswith("/big/"):
            n = int(self.path[5:])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            block = b"x" * 65536
            while n > 0:
                self.wfile.write(block[:min(n, len(block))])
                n -= len(block)
        elif self.path.startswith("/status/"):
            self._send(int(self.path[8:]), b"")
        else:
            echo = {"method": self.command, "path": self.path, "body_len": len(body),
                    "headers": dict(self.headers.items())}
            self._send(200, (json.dumps(echo) + "\n").encode())

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle


def main():
    args = sys.argv[1:]
    tls = None
    if "--tls" in args:
        i = args.index("--tls")
        tls = (args[i + 1], args[i + 2])
    if "--git" in args:
        Handler.git_root = args[args.index("--git") + 1]
    if "--log" in args:
        Handler.log_file = args[args.index("--log") + 1]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tls[0], tls[1])
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    sys.stdout.close()
    server.serve_forever()


if __name__ == "__main__":
    main()
