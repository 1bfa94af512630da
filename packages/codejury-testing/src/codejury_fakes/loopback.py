"""What every loopback fake server shares: a free 127.0.0.1 port, a daemon thread, quiet logs.

``LoopbackServer`` starts serving on ``start()`` (or ``with``) and stops on ``stop()`` (safe
when never started, and when called twice); ``stopping`` is set first, so a handler that
pauses can give up. ``QuietHandler`` speaks HTTP/1.1 without Nagle's delay (headers and body
go out in two writes: no 40 ms delayed-ACK stall) and logs nothing.
"""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self


class QuietServer(ThreadingHTTPServer):
    """Clients that hang up (after a timeout, a drop or bad JSON) are expected, not worth a traceback."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class QuietHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def read_body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def send_head(self, status: int, headers: dict[str, str]) -> None:
        """A response's status line and headers; the body follows on ``wfile``."""
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def send_body(self, status: int, content_type: str, data: bytes) -> None:
        """One whole response: ``status``, ``data`` as ``content_type`` with its length."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class LoopbackServer:
    """A fake served from a daemon thread on a free loopback port (``thread_name`` names the thread)."""

    thread_name: ClassVar[str] = "fake-server"

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.stopping = threading.Event()
        self._httpd = QuietServer(("127.0.0.1", 0), handler)
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        """Serve in a daemon thread."""
        # A short poll interval: shutdown() waits up to one interval, once per test.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name=self.thread_name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port (safe when never started, and when called twice)."""
        # shutdown() waits for serve_forever() to notice: called without a running loop it blocks forever.
        self.stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"
