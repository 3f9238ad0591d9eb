#!/usr/bin/env python3
"""A plain HTTP(S) Helm chart repository for syncd's tests (stdlib only).

    chartrepo.py DIR [--port N] [--log FILE] [--basic USER:PASSFILE]
                 [--tls CERT KEY] [--redirect-to URL] [--bomb]
                 [--slow [body|headers]]

Serves the files of DIR (index.yaml, the charts' .tgz) on 127.0.0.1 (port
0: one the kernel picks) and prints "port N" as its first line on stdout
once it accepts connections. GET and HEAD only; anything outside DIR, a
folder or a missing file is 404.

Every file is sent with a strong ETag (the sha256 of its content, quoted),
Content-Length and Content-Type; a request whose If-None-Match names that
ETag (or "*") is answered 304 with no body. The file is read on each
request, so a test may replace it (helm repo index) while the server runs.

  --log FILE      appends one line per request, flushed at once:
                  "METHOD PATH STATUS", followed by " auth" when the
                  request carried an Authorization header (so a test can
                  tell where credentials were sent); a request the server
                  never answers (--slow headers) is logged with status "-"
  --basic U:F     basic authentication: user U, the password the first
                  line of file F; otherwise 401 with WWW-Authenticate
  --tls CERT KEY  HTTPS with that certificate chain and key (PEM)
  --redirect-to URL
                  every request is answered 302 to URL followed by the
                  request's path (and query), before any authentication
  --bomb          /index.yaml is a small YAML alias bomb ("billion
                  laughs": about 1 KB, 10^9 scalars once aliases are
                  expanded), and /huge/index.yaml is an endless body (no
                  Content-Length, valid YAML comments forever, until the
                  client hangs up or 120 s have passed)
  --slow [MODE]   MODE body (the default): the status line and headers
                  (with the file's Content-Length) are sent, the body
                  never is; MODE headers: nothing is ever sent. The
                  connection is held until the client hangs up, the server
                  stops, or 300 s have passed.

SIGTERM or SIGINT stops the server (held connections are dropped).
"""

import argparse
import hashlib
import hmac
import base64
import os
import signal
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

STOP = threading.Event()
LOG_LOCK = threading.Lock()

BOMB = b"""apiVersion: v1
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h,*h]
entries:
  bomb:
  - apiVersion: v2
    name: bomb
    version: 1.0.0
    digest: 0000000000000000000000000000000000000000000000000000000000000000
    urls: [bomb-1.0.0.tgz]
    keywords: *i
generated: "2026-01-01T00:00:00Z"
"""

ENDLESS_HEAD = b"apiVersion: v1\nentries: {}\n"
ENDLESS_CHUNK = b"#" + b" lol" * 255 + b"\n"  # 1 KiB of YAML comment


def etag_of(data):
    return '"' + hashlib.sha256(data).hexdigest() + '"'


def etag_matches(header, etag):
    """If-None-Match uses the weak comparison (RFC 9110 13.1.2)."""
    for tag in header.split(","):
        tag = tag.strip()
        if tag == "*":
            return True
        if tag.startswith("W/"):
            tag = tag[2:]
        if tag == etag:
            return True
    return False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "chartrepo"
    sys_version = ""
    # An idle kept-alive connection is closed after this long.
    timeout = 60

    def log_message(self, fmt, *args):  # no stderr line per request
        pass

    def record(self, status):
        log = self.server.opts.log
        if not log:
            return
        path = self.path.replace("\n", "%0A").replace(" ", "%20")
        line = "%s %s %s%s\n" % (self.command, path, status,
                                 " auth" if self.headers.get("Authorization") else "")
        with LOG_LOCK:
            with open(log, "a") as f:
                f.write(line)
                f.flush()

    def send_simple(self, status, text, extra=()):
        body = (text + "\n").encode()
        self.send_response(status)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.record(status)

    def authorized(self):
        want = self.server.basic
        if want is None:
            return True
        got = self.headers.get("Authorization", "")
        if got[:6].lower() == "basic ":
            try:
                got = base64.b64decode(got[6:].strip(), validate=True)
            except ValueError:
                got = b""
            if hmac.compare_digest(got, want):
                return True
        return False

    def hold(self, seconds):
        end = time.monotonic() + seconds
        while not STOP.is_set() and time.monotonic() < end:
            STOP.wait(0.5)

    def do_GET(self):
        self.serve()

    def do_HEAD(self):
        self.serve()

    def serve(self):
        opts = self.server.opts
        if opts.redirect_to:
            self.send_simple(302, "moved", [("Location", opts.redirect_to.rstrip("/") + self.path)])
            return
        if not self.authorized():
            self.send_simple(401, "unauthorized",
                             [("WWW-Authenticate", 'Basic realm="chartrepo"')])
            return
        path = urlsplit(self.path).path
        if opts.bomb and path == "/huge/index.yaml":
            self.endless()
            return
        if opts.bomb and path == "/index.yaml":
            data = BOMB
        else:
            data = self.read_file(path)
            if data is None:
                self.send_simple(404, "not found")
                return
        etag = etag_of(data)
        if opts.slow == "headers":
            self.record("-")
            self.hold(300)
            self.close_connection = True
            return
        inm = self.headers.get("If-None-Match")
        if inm is not None and etag_matches(inm, etag):
            self.send_response(304)
            self.send_header("ETag", etag)
            self.end_headers()
            self.record(304)
            return
        self.send_response(200)
        self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Content-Type", content_type(path))
        self.end_headers()
        self.record(200)
        if opts.slow == "body":
            self.wfile.flush()
            self.hold(300)
            self.close_connection = True
            return
        if self.command != "HEAD":
            self.wfile.write(data)

    def read_file(self, path):
        root = self.server.root
        rel = unquote(path).lstrip("/")
        full = os.path.realpath(os.path.join(root, rel))
        if full != root and not full.startswith(root + os.sep):
            return None
        if not os.path.isfile(full):
            return None
        try:
            with open(full, "rb") as f:
                return f.read()
        except OSError:
            return None

    def endless(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/x-yaml")
        self.send_header("Connection", "close")
        self.end_headers()
        self.record(200)
        self.close_connection = True
        if self.command == "HEAD":
            return
        end = time.monotonic() + 120
        try:
            self.wfile.write(ENDLESS_HEAD)
            block = ENDLESS_CHUNK * 64
            while not STOP.is_set() and time.monotonic() < end:
                self.wfile.write(block)
        except OSError:
            pass


def content_type(path):
    if path.endswith((".yaml", ".yml")):
        return "application/x-yaml"
    if path.endswith((".tgz", ".gz")):
        return "application/gzip"
    return "application/octet-stream"


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    tls = None

    def finish_request(self, request, client_address):
        # The TLS handshake happens here, in the connection's own thread,
        # so that a client that never finishes it blocks nobody else.
        if self.tls is not None:
            try:
                request.settimeout(30)
                request.do_handshake()
            except (OSError, ssl.SSLError):
                return
        super().finish_request(request, client_address)


def main():
    p = argparse.ArgumentParser(description="Helm chart repository for tests")
    p.add_argument("dir")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--log")
    p.add_argument("--basic", metavar="USER:PASSFILE")
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    p.add_argument("--redirect-to", metavar="URL")
    p.add_argument("--bomb", action="store_true")
    p.add_argument("--slow", nargs="?", const="body", choices=["body", "headers"])
    opts = p.parse_args()

    root = os.path.realpath(opts.dir)
    if not os.path.isdir(root):
        p.error("%s is not a folder" % opts.dir)
    basic = None
    if opts.basic:
        user, sep, passfile = opts.basic.partition(":")
        if not sep or not user or not passfile:
            p.error("--basic wants USER:PASSFILE")
        with open(passfile, "rb") as f:
            password = f.read().split(b"\n", 1)[0].rstrip(b"\r")
        basic = user.encode() + b":" + password

    server = Server(("127.0.0.1", opts.port), Handler)
    server.opts = opts
    server.root = root
    server.basic = basic
    if opts.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(opts.tls[0], opts.tls[1])
        server.socket = ctx.wrap_socket(server.socket, server_side=True,
                                        do_handshake_on_connect=False)
        server.tls = ctx

    def stop(signum, frame):
        STOP.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print("port %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        STOP.set()
        server.server_close()


if __name__ == "__main__":
    main()
