"""Database URLs: which backend a URL names, and the forms each library reads.

Free of driver imports, so SQLite-only installs (no psycopg) can still ask.
"""

from __future__ import annotations

_SCHEMES = ("postgresql+psycopg://", "postgresql://", "postgres://")


def is_postgres_url(url: str) -> bool:
    """True for the URL forms ``open_store`` sends to the PostgreSQL backend."""
    return url.startswith(_SCHEMES)


def libpq_url(url: str) -> str:
    """The URL as libpq (psycopg) reads it: plain ``postgresql://``."""
    for scheme in _SCHEMES:
        if url.startswith(scheme):
            return "postgresql://" + url[len(scheme) :]
    raise ValueError(f"not a PostgreSQL URL: {url!r}")


def sqlalchemy_url(url: str) -> str:
    """The URL as SQLAlchemy (the migrations) reads it: the ``postgresql+psycopg`` driver."""
    return "postgresql+psycopg://" + libpq_url(url)[len("postgresql://") :]


def migration_url(url: str) -> str:
    """The URL SQLAlchemy (the migrations) opens for any kioku database URL."""
    return sqlalchemy_url(url) if is_postgres_url(url) else url


def display_url(url: str) -> str:
    """The URL fit for a console or a log: any password replaced by ``***``."""
    from sqlalchemy import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy parses: say nothing of it rather than leak it
        return "(unparsable database URL)"
