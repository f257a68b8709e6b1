"""Errors raised by the store.

StoreError
 ├── NotFound            a run, approval, effect or page id that does not exist
 ├── Conflict            a write lost a race: the row changed under it
 │    ├── AlreadyExists  an id that is already taken
 │    ├── AlreadyDecided an approval that is no longer pending
 │    ├── Expired        an approval whose deadline passed (it declines at the deadline)
 │    ├── AlreadyVoted   one person's second vote on an approval (the first counts)
 │    ├── LinkUsed       an e-mailed decision link whose use was recorded already
 │    ├── OverLimit      an edited amount that would pass a limit the call was within
 │    └── LeaseLost      another worker holds the run's lease
 ├── InvalidRecord       a record that cannot be stored as given
 ├── ProtectedFact       a write to a key the fact store protects
 ├── SchemaTooNew        a database written by a newer Signoff
 ├── UnreadableRecord    a row this Signoff's records cannot read (written by a newer one?)
 ├── UnsafeMigration     a migration older workers holding leases would misread
 ├── ForeignDatabase     a database file that belongs to another application
 ├── UnsupportedURL      a database URL whose scheme no backend handles
 └── DatabaseError       the driver failed (I/O, corruption, locked too long)
      └── DiskFull       the database's disk (or quota) is full: nothing was written
"""

from __future__ import annotations

from typing import Any


class DetailedError(Exception):
    """An error whose keyword details are attributes too, and whose message is its class's
    docstring unless given: the base of the store's errors and the runtime's."""

    def __init__(self, message: str | None = None, **details: Any) -> None:
        self.details = details
        for name, value in details.items():
            setattr(self, name, value)
        super().__init__(message or (self.__doc__ or "").strip())


class StoreError(DetailedError):
    """The store failed."""


class NotFound(StoreError):
    """No such record."""


class Conflict(StoreError):
    """The record changed under this write."""


class AlreadyExists(Conflict):
    """A record with this id already exists."""


class AlreadyDecided(Conflict):
    """The approval was already decided; a decision never changes."""


class Expired(Conflict):
    """The approval's deadline has passed; it can no longer be approved or declined by a person."""


class AlreadyVoted(Conflict):
    """This person already voted on the approval; their vote counts once."""


class LinkUsed(Conflict):
    """This e-mailed decision link was used already; each link decides once."""


class OverLimit(Conflict):
    """The decision would take a call past a limit it was asked within."""


class LeaseLost(Conflict):
    """Another worker holds this run's lease."""


class InvalidRecord(StoreError):
    """This record cannot be stored as given."""


class ProtectedFact(StoreError):
    """This fact key is protected and cannot be written."""


class SchemaTooNew(StoreError):
    """The database was written by a newer version of Signoff."""


class UnreadableRecord(StoreError):
    """A row this Signoff cannot read as its record: a value it does not know, most likely
    written by a newer Signoff. Nothing was changed by reading it."""


class UnsafeMigration(StoreError):
    """A pending migration is not safe while the workers that hold leases run: they would
    misread what it changes. Nothing was migrated."""


class ForeignDatabase(StoreError):
    """The database holds another application's tables; Signoff will not write to it."""


class UnsupportedURL(StoreError):
    """No store backend handles this database URL."""


class DatabaseError(StoreError):
    """The database driver failed."""


class DiskFull(DatabaseError):
    """The database's disk is full; the write was not made. Reads still work, and writes
    work again, without a restart, once space is freed."""
