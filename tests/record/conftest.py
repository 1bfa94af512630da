"""A store URL per backend, and a server that never answers.

``store_url`` is parametrised over SQLite and PostgreSQL (the session's server, ``tests/conftest.py``): each test
gets an empty database of its own.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty store on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store' / 'reviews.sqlite3'}"
    create: Callable[[], str] = request.getfixturevalue("new_pg_database")
    return create()


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word (a hung database or service)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    server.close()
