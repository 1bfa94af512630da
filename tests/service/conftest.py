"""The service's tests: the real PostgreSQL server of the store's tests, shared."""

from __future__ import annotations

from tests.record.conftest import PostgresServer, new_pg_database, postgres_server

__all__ = ["PostgresServer", "new_pg_database", "postgres_server"]
