"""The SQLite backend: the store (`store.sqlite.store`), its group-commit writer thread
(`writer`), opening and migrating a file (`schema`), and readiness checks (`health`)."""

from store.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]
