"""Why a database cannot be opened, said so that whoever started kioku can act on it.

``open_store`` (and ``kioku migrate``) open a database inside ``opening(url)``: it checks a
SQLite file before kioku creates, tightens or migrates anything (``sqlite_file``), and turns
what the drivers raise on the way (a missing driver, a server that does not answer, a damaged
or foreign file, a file mode, a schema revision this kioku does not know) into one of the
errors of ``open_errors``. Each message is one paragraph naming the file or URL and the
command that fixes it; the driver's exception stays as the cause, for a surface that shows
tracebacks on request (the CLI's ``--debug``).
"""

from __future__ import annotations

import importlib.metadata
import re
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from kioku.storage.open_errors import (
    DatabaseOpenError,
    DatabaseRefusedError,
    DatabaseUnreachableError,
    MissingDriverError,
    UnknownRevisionError,
)
from kioku.storage.sqlite_file import check_sqlite_file, sqlite_failure, sqlite_path
from kioku.storage.urls import display_url, is_postgres_url

DISTRIBUTION = "kioku-memory-server"
_DRIVER_MODULES = {"psycopg", "psycopg_pool", "psycopg_binary", "psycopg_c", "pgvector"}
# The `postgres` extra of pyproject.toml, for a kioku run from a source tree without metadata.
_POSTGRES_EXTRA = (
    "psycopg[binary]==3.3.9",
    "psycopg-pool==3.3.3",
    "pgvector==0.5.1",
    "tantivy==0.27.0",
)


@contextmanager
def opening(url: str) -> Iterator[None]:
    """Check the database at ``url`` before the block, and say plainly why the block could
    not open (or migrate) it: a ``DatabaseOpenError`` from the cause, which stays chained.
    Any other error passes through as it was."""
    if is_postgres_url(url):
        _check_driver(url)
    elif url.startswith("sqlite:"):
        check_sqlite_file(sqlite_path(url))
    try:
        yield
    except DatabaseOpenError:
        raise
    except Exception as exc:
        said = _translate(url, exc)
        if said is None:
            raise
        raise said from exc


def _translate(url: str, exc: Exception) -> DatabaseOpenError | None:
    revision = _unknown_revision(exc)
    if revision is not None:
        return UnknownRevisionError(
            f"the database at {_where(url)} is at schema revision {revision!r}, which this "
            f"kioku ({_version()}) does not know: a newer kioku wrote it, or it belongs to "
            "another application. Run the kioku that wrote it (or upgrade this one), or point "
            "KIOKU_DATABASE_URL (or --database-url) at a database of kioku's own. Nothing was "
            "migrated."
        )
    if url.startswith("sqlite:"):
        return sqlite_failure(sqlite_path(url), exc)
    if is_postgres_url(url):
        return _postgres_failure(url, exc)
    return None


def _where(url: str) -> str:
    return str(sqlite_path(url)) if url.startswith("sqlite:") else display_url(url)


def _unknown_revision(exc: BaseException) -> str | None:
    """The revision Alembic could not find (``Can't locate revision identified by 'x'``)."""
    from alembic.util.exc import CommandError

    if not isinstance(exc, CommandError):
        return None
    found = re.search(r"locate revision identified by '([^']*)'", str(exc))
    return found.group(1) if found else None


def _postgres_failure(url: str, exc: Exception) -> DatabaseOpenError | None:
    from kioku.storage.postgres.reachability import refusal_reason, unreachable_reason

    if (reason := unreachable_reason(exc)) is not None:
        host, port = _host_port(url)
        return DatabaseUnreachableError(
            f"cannot reach PostgreSQL at {display_url(url)}: {reason}. Check that the server "
            f"is running and reachable from here (`pg_isready -h {host} -p {port}`), and the "
            "host, port, user, password and database name in KIOKU_DATABASE_URL (or "
            "--database-url)."
        )
    if (reason := refusal_reason(exc)) is not None:
        return DatabaseRefusedError(
            f"PostgreSQL at {display_url(url)} refused kioku's schema: {reason}. kioku's role "
            "must own the database (or may create in its schema), and the vector extension "
            "must exist in it; as a superuser, once: `CREATE EXTENSION IF NOT EXISTS vector; "
            "ALTER DATABASE <db> OWNER TO <role>;` (docs/scaling.md), then `kioku migrate`."
        )
    return None


def _host_port(url: str) -> tuple[str, int]:
    from sqlalchemy import make_url

    try:
        parsed = make_url(url)
    except Exception:
        return "localhost", 5432
    return parsed.host or "localhost", parsed.port or 5432


def _check_driver(url: str) -> None:
    """Import the PostgreSQL backend now, so a missing driver is said before anything else."""
    try:
        import kioku.storage.postgres  # noqa: F401
    except ImportError as exc:
        if not _is_driver(exc):
            raise
        raise MissingDriverError(_missing_driver_message(url, exc)) from exc


def _is_driver(exc: ImportError) -> bool:
    top = (exc.name or "").partition(".")[0]
    # psycopg installed without a libpq binding (no [binary], no system libpq) says so itself.
    return top in _DRIVER_MODULES or "pq wrapper" in str(exc)


def _missing_driver_message(url: str, exc: ImportError) -> str:
    packages = " ".join(shlex.quote(p) for p in postgres_extra())
    python = shlex.quote(sys.executable)
    return (
        f"kioku cannot open {display_url(url)}: the PostgreSQL driver is not installed ({exc}). "
        "It comes with kioku's `postgres` extra; add it to the environment kioku runs in: "
        f"installed with pipx, `pipx inject {DISTRIBUTION} {packages}`; with uv, "
        f"`uv pip install --python {python} {packages}`; with pip, "
        f"`{python} -m pip install {packages}` (from a clone: `pip install -e '.[postgres]'`). "
        "Or leave KIOKU_DATABASE_URL unset to use the embedded SQLite file."
    )


def postgres_extra() -> list[str]:
    """The requirements of the ``postgres`` extra, as the installed metadata lists them."""
    try:
        requires = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return list(_POSTGRES_EXTRA)
    found = []
    for requirement in requires:
        spec, _, marker = requirement.partition(";")
        if re.search(r"""extra\s*==\s*['"]postgres['"]""", marker):
            found.append(spec.strip().replace(" ", ""))
    return found or list(_POSTGRES_EXTRA)


def _version() -> str:
    from kioku._version import __version__

    return __version__


__all__ = ["opening", "postgres_extra"]
