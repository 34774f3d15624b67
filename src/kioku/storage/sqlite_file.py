"""A SQLite file looked at before kioku uses it, and SQLite's failures said with its path.

The checks run before kioku creates the file, tightens its mode or migrates it: a file that is
not a SQLite database, a damaged one, another application's database and a file or folder this
user may not write are refused as they are, untouched, with the path and what to do.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from shlex import quote

from kioku.storage.open_errors import (
    DamagedDatabaseError,
    DatabaseOpenError,
    DatabasePermissionError,
    ForeignDatabaseError,
)

HEADER = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""
_URL_HINT = "KIOKU_DATABASE_URL (or --database-url)"


def sqlite_path(url: str) -> Path:
    """The file of a ``sqlite:///path`` URL."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or len(url) == len(prefix):
        raise ValueError(f"not a sqlite file URL: {url!r}")
    return Path(url[len(prefix) :]).expanduser()


def check_sqlite_file(path: Path) -> None:
    """Refuse ``path`` before anything touches it when kioku could not (or must not) use it."""
    if not _exists(path):
        _check_creatable(path)
        return
    if path.is_dir():
        raise DamagedDatabaseError(
            f"{path} is a folder, not a database file: point {_URL_HINT} at a file in it, "
            f"e.g. sqlite:///{path / 'kioku.db'}"
        )
    if not os.access(path, os.R_OK | os.W_OK):
        raise DatabasePermissionError(
            f"kioku may not read and write its database {path} ({_owner_and_mode(path)}; kioku "
            f"runs as user {_user()}). {_access_fix(path, '600')}, or point {_URL_HINT} at a "
            "file this user owns."
        )
    folder = path.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DatabasePermissionError(
            f"kioku may not write in {folder}, the folder of its database {path} "
            f"({_owner_and_mode(folder)}; kioku runs as user {_user()}): SQLite keeps its -wal and "
            f"-shm files beside the database. {_access_fix(folder, '700')}, or move the "
            f"database to a folder this user owns and point {_URL_HINT} there."
        )
    if path.stat().st_size == 0:
        return  # an empty file (kioku makes one before migrating): the migrations fill it
    with path.open("rb") as handle:
        header = handle.read(len(HEADER))
    if header != HEADER:
        raise DamagedDatabaseError(
            f"{path} is not a SQLite database (its first bytes are not SQLite's header): "
            f"kioku left it untouched. {_restore_advice(path)}"
        )
    tables = _tables(path)
    if tables and "alembic_version" not in tables:
        shown = ", ".join(tables[:5]) + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")
        raise ForeignDatabaseError(
            f"{path} is a SQLite database of another application (tables: {shown}), not "
            "kioku's: kioku left it untouched and will not add its own tables to it. Point "
            f"{_URL_HINT} at a file of kioku's own (a new path is created), or unset it for "
            "the default."
        )


def sqlite_failure(path: Path, exc: BaseException) -> DatabaseOpenError | None:
    """What SQLite's (or the file system's) error while opening ``path`` means, said; ``None``
    for an error that is not about the file."""
    if isinstance(exc, PermissionError):
        return _not_permitted(path, exc)
    orig = getattr(exc, "orig", None)  # SQLAlchemy wraps the driver's error
    error = orig if isinstance(orig, sqlite3.Error) else exc
    if not isinstance(error, sqlite3.Error):
        return None
    name = getattr(error, "sqlite_errorname", "")
    if name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")):
        return DamagedDatabaseError(
            f"{path} is damaged: SQLite says {error}. {_restore_advice(path)} SQLite's own "
            f"`sqlite3 {quote(str(path))} .recover` may save part of it."
        )
    if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM")):
        return DatabasePermissionError(
            f"SQLite cannot write kioku's database {path} ({error}; kioku runs as user {_user()}). "
            f"The file, its folder and any {path.name}-wal and {path.name}-shm beside it must "
            "be writable by this user: run kioku as their owner, or `chown` them to it."
        )
    return None


def _restore_advice(path: Path) -> str:
    aside = quote(f"{path}.damaged")
    return (
        f"If it held kioku's memories, move it aside (`mv {quote(str(path))} {aside}`) and "
        "restore your last export into a fresh database (`kioku import BACKUP.jsonl`); if it "
        f"is another file, point {_URL_HINT} elsewhere."
    )


def _tables(path: Path) -> list[str]:
    """The tables of the database at ``path``, read without writing anything."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            rows = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        said = sqlite_failure(path, exc)
        if said is None:
            raise
        raise said from exc
    return [row[0] for row in rows]


def _not_permitted(path: Path, exc: PermissionError) -> DatabasePermissionError:
    where = Path(exc.filename) if exc.filename else path
    return DatabasePermissionError(
        f"kioku may not create or open {where} (for its database {path}; kioku runs as user "
        f"{_user()}): {exc.strerror}. Create the folder for this user (`install -d -m 700 -o "
        f"{_user()} {quote(str(path.parent))}` as root), or point {_URL_HINT} at a folder this "
        "user owns."
    )


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except PermissionError as exc:  # a folder on the way that this user may not enter
        raise _not_permitted(path, exc) from exc


def _check_creatable(path: Path) -> None:
    """A new database: the nearest existing folder on its path must be writable."""
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise DatabasePermissionError(
            f"kioku cannot create its database {path}: {ancestor} is a file, not a folder. "
            f"Point {_URL_HINT} at a path in a folder."
        )
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise DatabasePermissionError(
            f"kioku cannot create its database {path}: {ancestor} is not writable by "
            f"user {_user()} ({_owner_and_mode(ancestor)}). Create the folder for this user "
            f"(`install -d -m 700 -o {_user()} {quote(str(path.parent))}` as root), or point "
            f"{_URL_HINT} at a folder this user owns."
        )


def _owner_and_mode(path: Path) -> str:
    info = path.stat()
    return f"owner {_name(info.st_uid)}, mode {stat.S_IMODE(info.st_mode):03o}"


def _access_fix(path: Path, mode: str) -> str:
    """The command giving this user ``path`` back: its mode if the user owns it, else the
    ownership (as root) or running kioku as the owner."""
    owner = _name(path.stat().st_uid)
    if owner == _user():
        return f"This user owns it: `chmod {mode} {quote(str(path))}` gives the access back"
    return (
        f"Run kioku as {owner} (the owner), or give it to this user: `chown {_user()} "
        f"{quote(str(path))}` (as root)"
    )


def _user() -> str:
    """The user kioku runs as: a name, else the number (a container's uid without a name)."""
    geteuid = getattr(os, "geteuid", None)
    return "" if geteuid is None else _name(geteuid())


def _name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)
