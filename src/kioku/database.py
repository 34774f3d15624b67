"""The database without a runtime, for the commands that need no more: migrate it, open a bare
store (export and import: no embedder loaded, no ``default`` workspace created), and name it
without its password. A database that cannot be opened raises ``DatabaseOpenError``, whose
message says why and what to do.

With ``kioku.runtime`` it is the surfaces' only door to ``kioku.storage`` (the structure test
holds them to it): a surface asks for a database here, then hands it to a service.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kioku.storage import DatabaseOpenError, Store, open_store, opening
from kioku.storage.urls import display_url, is_postgres_url, migration_url

__all__ = ["DatabaseOpenError", "bare_store", "display_url", "migrate"]


@contextmanager
def bare_store(url: str) -> Iterator[Store]:
    """The store at ``url`` (opened, so migrated), closed after the block."""
    store = open_store(url)
    try:
        yield store
    finally:
        store.close()


def migrate(url: str) -> dict[str, str | None]:
    """Bring the database at ``url`` to the newest schema: its backend, the revision it was
    at (``None``: empty), the one it is at now, and the newest there is."""
    # Only ``kioku migrate`` asks for revisions; every command imports this module.
    from kioku.storage.migrations import head_revision, schema_revision

    with opening(url):  # a database it cannot open is said, before a revision is asked
        before = schema_revision(migration_url(url))
    open_store(url).close()  # opening migrates
    after = schema_revision(migration_url(url))
    backend = "postgresql" if is_postgres_url(url) else "sqlite"
    return {"backend": backend, "from": before, "to": after, "head": head_revision()}
