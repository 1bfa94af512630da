"""The store fixtures of the record tests (SQLite and PostgreSQL alike), shared with the memory tests."""

from tests.record.conftest import silent_server, store_url

__all__ = ["silent_server", "store_url"]
