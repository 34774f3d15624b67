"""The errors of a database kioku cannot open (``storage/opening.py`` raises them).

Each is a ``ValueError`` whose message is the whole story for a person: what was tried (the
file or the URL, password hidden), why it failed, and the command that fixes it. A surface
prints the message and no traceback; the driver's exception is chained as the cause.
"""

from __future__ import annotations


class DatabaseOpenError(ValueError):
    """The database could not be opened; the message says why and what to do."""


class DatabaseUnreachableError(DatabaseOpenError):
    """The database server did not answer, or refused the connection: one line saying what was
    tried and what to check, in place of the driver's traceback."""


class MissingDriverError(DatabaseOpenError):
    """A PostgreSQL URL on an installation without the ``postgres`` extra."""


class DatabaseRefusedError(DatabaseOpenError):
    """PostgreSQL answered but would not let kioku's role create or read its tables."""


class UnknownRevisionError(DatabaseOpenError):
    """The database's schema revision is none this kioku knows: a newer kioku's database, or
    another application's Alembic table."""


class DamagedDatabaseError(DatabaseOpenError):
    """The file is not a SQLite database, or SQLite finds it damaged."""


class ForeignDatabaseError(DatabaseOpenError):
    """A SQLite database of another application (tables, none of them kioku's): left alone."""


class DatabasePermissionError(DatabaseOpenError):
    """The file or its folder is not readable and writable by the user kioku runs as."""
