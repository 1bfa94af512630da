"""A remote routing document server on loopback, with the ways such a server goes wrong.

Paths: ``/routing.json`` serves ``body`` with ``status`` (after ``hang_s``) and an ``ETag`` of the
body (a request whose ``If-None-Match`` holds it gets a 304, counted in ``not_modified``); ``/endless`` streams
JSON-looking bytes without end (chunked, no length); ``/drip`` sends one byte every 50 ms
forever (each read is quick, the whole never ends); ``/loop`` redirects to itself; ``/deep``
is an array nested 100,000 deep (under the size cap); ``/big-length`` declares a 1 GB body.
"""

from __future__ import annotations

import hashlib
import time

from codejury_fakes.loopback import LoopbackServer, QuietHandler

DEEP = b"[" * 100_000 + b"]" * 100_000


class RoutingServer(LoopbackServer):
    thread_name = "fake-routing-server"

    def __init__(self) -> None:
        self.body = b"{}"
        self.status = 200
        self.hang_s = 0.0
        self.hits = 0
        self.not_modified = 0
        outer = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                outer.hits += 1
                route = {
                    "/endless": self._endless,
                    "/drip": self._drip,
                    "/loop": self._loop,
                    "/deep": lambda: self._send(200, DEEP),
                    "/big-length": self._big_length,
                }.get(self.path)
                if route is not None:
                    route()
                    return
                if outer.hang_s:
                    outer.stopping.wait(outer.hang_s)
                body = outer.body
                etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                if outer.status == 200 and self.headers.get("if-none-match") == etag:
                    outer.not_modified += 1
                    self.send_response(304)
                    self.send_header("etag", etag)
                    self.end_headers()
                    return
                self._send(outer.status, body, etag)

            def _send(self, status: int, body: bytes, etag: str | None = None) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                if etag is not None:
                    self.send_header("etag", etag)
                self.end_headers()
                self.wfile.write(body)

            def _stream(self, chunks: int, chunk: bytes, pause_s: float) -> None:
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                self.wfile.write(b"1\r\n{\r\n")
                for _ in range(chunks):
                    if outer.stopping.is_set():
                        return
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                    if pause_s:
                        time.sleep(pause_s)

            def _endless(self) -> None:
                self._stream(10**9, b" " * 65536, 0.0)

            def _drip(self) -> None:
                self._stream(10**9, b" ", 0.05)

            def _loop(self) -> None:
                self.send_response(302)
                self.send_header("location", "/loop")
                self.send_header("content-length", "0")
                self.end_headers()

            def _big_length(self) -> None:
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(1 << 30))
                self.end_headers()
                self.wfile.write(b"{")

        super().__init__(Handler)

    @property
    def url(self) -> str:
        return f"{self.origin}/routing.json"
