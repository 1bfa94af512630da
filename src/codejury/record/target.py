"""Where reviews are recorded: ``record.url`` / ``CODEJURY_RECORD_URL`` parsed into a ``RecordTarget``.

- unset: the SQLite file ``reviews.sqlite3`` in the user's data directory (platformdirs);
- ``sqlite:///relative/path`` or ``sqlite:////absolute/path`` (``~`` is expanded);
- ``postgresql://user@host:port/db`` (also ``postgres://`` and ``postgresql+psycopg://``);
- ``https://service`` (``http://`` only on a loopback host): a review service, ``POST {url}/api/ingest``;
- ``none``: record nothing.

Light on purpose: the config schema validates ``record.url`` with ``parse_record_url`` at start-up,
so nothing here imports SQLAlchemy. A URL may carry a password: messages show ``shown`` only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

TargetKind = Literal["none", "sqlite", "postgresql", "service"]
DEFAULT_FILE = "reviews.sqlite3"
_LOOPBACK = ("127.0.0.1", "::1", "localhost")
_EXPECTED = "sqlite:///PATH, postgresql://HOST/DB, https://URL or none"


@dataclass(frozen=True)
class RecordTarget:
    """A parsed store URL: ``kind`` and the URL to connect to (``url``, never printed)."""

    kind: TargetKind
    url: str = field(default="", repr=False)
    """SQLAlchemy URL (sqlite, postgresql), the service's base URL, or "" for none."""
    shown: str = ""
    """The target without credentials, for messages: ``sqlite:///…/reviews.sqlite3``, ``postgresql://host/db``."""
    path: Path | None = None
    """The SQLite file."""


def default_store_path() -> Path:
    """The default store: ``reviews.sqlite3`` in the user's data directory."""
    from platformdirs import user_data_path

    return user_data_path("codejury", appauthor=False) / DEFAULT_FILE


def sqlite_target(path: Path) -> RecordTarget:
    path = path.expanduser().absolute()
    return RecordTarget("sqlite", f"sqlite+pysqlite:///{path}", f"sqlite:///{path}", path)


def parse_record_url(text: str | None) -> RecordTarget:
    """``text`` as a target (None or "" → the default SQLite file); ValueError says what is expected."""
    value = (text or "").strip()
    if not value:
        return sqlite_target(default_store_path())
    if value.lower() == "none":
        return RecordTarget("none", shown="none")
    scheme, sep, rest = value.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise ValueError(_EXPECTED)
    if scheme in ("sqlite", "sqlite+pysqlite"):
        if not rest.startswith("/") or rest in ("/", "//"):
            raise ValueError("sqlite:///PATH with a file path (sqlite:////abs/path for an absolute one)")
        return sqlite_target(Path(rest[1:]))
    try:
        parts = urlsplit(value)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        raise ValueError(_EXPECTED) from None
    if port == 0:
        raise ValueError(_EXPECTED)
    where = f"{host}:{port}" if port else host
    if scheme in ("postgresql", "postgres", "postgresql+psycopg"):
        database = parts.path.lstrip("/")
        if not database:
            raise ValueError("postgresql://HOST/DATABASE naming the database")
        return RecordTarget("postgresql", "postgresql+psycopg://" + rest, f"postgresql://{where}/{database}")
    if scheme in ("https", "http"):
        if not host:
            raise ValueError(_EXPECTED)
        if scheme == "http" and host not in _LOOPBACK:
            raise ValueError("https:// for a review service (http:// only on localhost: the token would travel clear)")
        base = f"{scheme}://{rest}".rstrip("/")
        return RecordTarget("service", base, f"{scheme}://{where}{parts.path.rstrip('/')}")
    raise ValueError(_EXPECTED)
