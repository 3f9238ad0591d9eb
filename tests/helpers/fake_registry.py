#!/usr/bin/env python3
"""A fake OCI distribution registry on loopback, for the source tests.

    fake_registry.py --root DIR [--token] [--basic USER:PASS]
                     [--redirect-blobs URL|self] [--huge-layer]
                     [--page-size N] [--no-digest-header]

Prints the port it listens on (127.0.0.1) as the first line of stdout,
then serves until killed, or until its parent process is gone.

Content, from DIR (read on every request, so a test may change it):
    DIR/NAME/manifests/TAG          a manifest by tag (the digest is its
                                    sha256); tags/list lists these
    DIR/NAME/manifests/sha256:HEX   a manifest by digest, served as it is
                                    even when HEX is not its sha256
    DIR/NAME/blobs/sha256:HEX       a blob, served as it is
NAME may hold slashes. Manifests by digest are also found among the tags.

Modes:
    --token         /v2/ wants "Authorization: Bearer T" for a T that
                    GET /token gave out; else 401 with a Bearer challenge
                    whose realm is /token on this server
    --basic U:P     without --token, /v2/ wants basic auth (Basic
                    challenge); with --token, /token wants it
    --redirect-blobs URL   blob GETs answer 302 to URL/_blob/NAME/DIGEST;
                    "self" redirects to this server (a relative Location)
    --huge-layer    tags "huge" (a layer that claims 1 GiB; its GET sends
                    a Content-Length of 1 GiB) and "endless" (a layer that
                    claims 1000 bytes and whose GET never ends) in every
                    repository
    --page-size N   tags/list pages hold at most N tags (with a Link to the
                    next page), whatever n asks
    --foreign-link  the Link of a tags page points to another host
    --no-digest-header  no Docker-Content-Digest header

GET /_stats: request counts as JSON, keyed "METHOD kind" with kind one of
manifests, blobs, tags, token, blob-redirected, other.
"""

import argparse
import base64
import hashlib
import json
import os
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HUGE_SIZE = 1 << 30
HUGE_DIGEST = "sha256:" + "1" * 64
ENDLESS_DIGEST = "sha256:" + "2" * 64
CONFIG = b"{}"
CONFIG_DIGEST = "sha256:" + hashlib.sha256(CONFIG).hexdigest()
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"

ARGS = None
STATS = {}
TOKENS = set()
LOCK = threading.Lock()


def count(method, kind):
    with LOCK:
        key = method + " " + kind
        STATS[key] = STATS.get(key, 0) + 1


def synthetic_manifest(digest, size):
    return json.dumps({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": CONFIG_DIGEST, "size": len(CONFIG)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": digest, "size": size}],
    }, separators=(",", ":")).encode()


def safe_join(*parts):
    path = os.path.join(*parts)
    root = os.path.realpath(ARGS.root)
    real = os.path.realpath(path)
    if real != root and not real.startswith(root + os.sep):
        return None
    return path


def read(path):
    if path is None or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        return f.read()


def manifest_tags(name):
    d = safe_join(ARGS.root, name, "manifests")
    tags = []
    if d and os.path.isdir(d):
        tags = [t for t in os.listdir(d) if not t.startswith("sha256:")]
    if ARGS.huge_layer:
        tags += ["huge", "endless"]
    return sorted(tags)


def find_manifest(name, ref):
    if ARGS.huge_layer and ref == "huge":
        return synthetic_manifest(HUGE_DIGEST, HUGE_SIZE)
    if ARGS.huge_layer and ref == "endless":
        return synthetic_manifest(ENDLESS_DIGEST, 1000)
    body = read(safe_join(ARGS.root, name, "manifests", ref))
    if body is not None or not ref.startswith("sha256:"):
        return body
    for tag in manifest_tags(name):
        b = find_manifest(name, tag)
        if b is not None and "sha256:" + hashlib.sha256(b).hexdigest() == ref:
            return b
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send(self, status, body=b"", headers=(), head=False):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def error(self, status, code, message, headers=(), head=False):
        body = json.dumps({"errors": [{"code": code, "message": message}]})
        self.send(status, body.encode(),
                  [("Content-Type", "application/json")] + list(headers),
                  head)

    def authorized(self, name, head):
        auth = self.headers.get("Authorization", "")
        if ARGS.token:
            if auth.startswith("Bearer ") and auth[7:] in TOKENS:
                return True
            realm = "http://127.0.0.1:%d/token" % self.server.server_port
            self.error(401, "UNAUTHORIZED", "authentication required", [(
                "WWW-Authenticate",
                'Bearer realm="%s",service="fake",scope="repository:%s:pull"'
                % (realm, name))], head)
            return False
        if ARGS.basic:
            want = "Basic " + base64.b64encode(ARGS.basic.encode()).decode()
            if auth == want:
                return True
            self.error(401, "UNAUTHORIZED", "authentication required",
                       [("WWW-Authenticate", 'Basic realm="fake"')], head)
            return False
        return True

    def token(self):
        count("GET", "token")
        if ARGS.basic:
            want = "Basic " + base64.b64encode(ARGS.basic.encode()).decode()
            if self.headers.get("Authorization", "") != want:
                self.error(401, "UNAUTHORIZED", "bad credentials")
                return
        q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        if q.get("service") != ["fake"] or not q.get("scope"):
            self.error(400, "BAD_REQUEST", "service and scope wanted")
            return
        tok = secrets.token_hex(16)
        with LOCK:
            TOKENS.add(tok)
        self.send(200, json.dumps({"token": tok, "expires_in": 300}).encode(),
                  [("Content-Type", "application/json")])

    def stream_blob(self, digest, head):
        if digest == HUGE_DIGEST:
            self.send_response(200)
            self.send_header("Content-Length", str(HUGE_SIZE))
            self.end_headers()
            if head:
                return
            chunk = b"\0" * 65536
            for _ in range(HUGE_SIZE // len(chunk)):
                self.wfile.write(chunk)
            return
        # No length, chunked, never ends (until the client goes away).
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if head:
            return
        chunk = b"\0" * 65536
        frame = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
        while True:
            self.wfile.write(frame)

    def v2(self, head):
        path = urllib.parse.urlparse(self.path).path
        query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        rest = path[len("/v2/"):]
        method = "HEAD" if head else "GET"
        for kind in ("manifests", "blobs", "tags"):
            sep = "/" + kind + "/"
            if sep in rest:
                name, ref = rest.rsplit(sep, 1)
                break
        else:
            count(method, "other")
            if rest == "":
                self.send(200, b"{}", head=head)
            else:
                self.error(404, "NOT_FOUND", "no such route", head=head)
            return
        count(method, kind)
        if not self.authorized(name, head):
            return
        if kind == "manifests":
            body = find_manifest(name, ref)
            if body is None:
                self.error(404, "MANIFEST_UNKNOWN", "manifest unknown",
                           head=head)
                return
            headers = [("Content-Type", OCI_MANIFEST)]
            if not ARGS.no_digest_header:
                d = ref if ref.startswith("sha256:") else \
                    "sha256:" + hashlib.sha256(body).hexdigest()
                headers.append(("Docker-Content-Digest", d))
            self.send(200, body, headers, head)
        elif kind == "blobs":
            if ARGS.redirect_blobs:
                target = "/_blob/%s/%s" % (name, ref)
                if ARGS.redirect_blobs != "self":
                    target = ARGS.redirect_blobs.rstrip("/") + target
                self.send(302, b"", [("Location", target)], head)
                return
            self.blob(name, ref, head)
        else:
            self.tags(name, query, head)

    def blob(self, name, ref, head):
        if ARGS.huge_layer and ref in (HUGE_DIGEST, ENDLESS_DIGEST):
            self.stream_blob(ref, head)
            return
        body = read(safe_join(ARGS.root, name, "blobs", ref))
        if body is None:
            self.error(404, "BLOB_UNKNOWN", "blob unknown", head=head)
            return
        self.send(200, body, [("Content-Type", "application/octet-stream")],
                  head)

    def tags(self, name, query, head):
        d = safe_join(ARGS.root, name)
        if not (d and os.path.isdir(d)) and not ARGS.huge_layer:
            self.error(404, "NAME_UNKNOWN", "repository unknown", head=head)
            return
        tags = manifest_tags(name)
        last = query.get("last", [None])[0]
        if last is not None:
            tags = [t for t in tags if t > last]
        n = int(query.get("n", ["0"])[0] or 0)
        if ARGS.page_size and (n == 0 or n > ARGS.page_size):
            n = ARGS.page_size
        headers = [("Content-Type", "application/json")]
        if n and len(tags) > n:
            tags = tags[:n]
            link = "/v2/%s/tags/list?n=%d&last=%s" % (
                name, n, urllib.parse.quote(tags[-1]))
            if ARGS.foreign_link:
                link = "http://localhost:%d%s" % (self.server.server_port,
                                                  link)
            headers.append(("Link", '<%s>; rel="next"' % link))
        body = json.dumps({"name": name, "tags": tags}).encode()
        self.send(200, body, headers, head)

    def do_GET(self):
        self.route(False)

    def do_HEAD(self):
        self.route(True)

    def route(self, head):
        try:
            path = urllib.parse.urlparse(self.path).path
            if path == "/_stats":
                with LOCK:
                    body = json.dumps(STATS).encode()
                self.send(200, body, [("Content-Type", "application/json")])
            elif path == "/token":
                self.token()
            elif path.startswith("/_blob/"):
                count("HEAD" if head else "GET", "blob-redirected")
                name, ref = path[len("/_blob/"):].rsplit("/", 1)
                self.blob(name, ref, head)
            elif path.startswith("/v2/"):
                self.v2(head)
            else:
                count("HEAD" if head else "GET", "other")
                self.error(404, "NOT_FOUND", "no such route", head=head)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def watch_parent(parent):
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(0)


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", required=True)
    p.add_argument("--token", action="store_true")
    p.add_argument("--basic")
    p.add_argument("--redirect-blobs")
    p.add_argument("--huge-layer", action="store_true")
    p.add_argument("--page-size", type=int, default=0)
    p.add_argument("--foreign-link", action="store_true")
    p.add_argument("--no-digest-header", action="store_true")
    ARGS = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=watch_parent, args=(os.getppid(),),
                     daemon=True).start()
    sys.stdout.write("%d\n" % server.server_port)
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
