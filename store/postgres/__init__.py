"""The PostgreSQL backend, on asyncpg: for several processes (and hosts) sharing one database."""

from store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
