"""The database without a runtime, for the commands that need no more: migrate it (``kioku
migrate``), move a whole workspace out or in (``kioku export``/``import``: no embedder loaded,
no ``default`` workspace or context created), and name it without its password. A database
that cannot be opened raises a ``DatabaseOpenError`` (a ``ValueError``) whose message says why
and what to do.

The store stays in here: a command gets a ``WorkspaceTransfer``, which offers export and
import and nothing else, as a runtime offers its services (``kioku.runtime``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from kioku.service.transfer import Progress, TransferSummary, export_workspace, import_file
from kioku.storage import open_store, opening
from kioku.storage.migrations import head_revision, schema_revision
from kioku.storage.ports import TransferPort
from kioku.storage.urls import display_url as url_without_password
from kioku.storage.urls import is_postgres_url, migration_url


class WorkspaceTransfer:
    """Export and import of whole workspaces on one open database (``service/transfer.py``)."""

    def __init__(self, store: TransferPort) -> None:
        self._store = store

    def export_workspace(
        self,
        workspace: str,
        now: datetime,
        write: Callable[[str], object],
        progress: Progress | None = None,
    ) -> TransferSummary:
        """Write the export of ``workspace`` to ``write``, line by line (``export_workspace``)."""
        return export_workspace(self._store, workspace, now, write, progress)

    def import_file(
        self, path: Path, workspace: str | None = None, progress: Progress | None = None
    ) -> TransferSummary:
        """Restore the export at ``path`` into ``workspace``, all or nothing (``import_file``)."""
        return import_file(self._store, path, workspace, progress)


@contextmanager
def open_transfer(url: str) -> Iterator[WorkspaceTransfer]:
    """The database at ``url`` opened (so migrated) for export and import, closed after the
    block."""
    store = open_store(url)
    try:
        yield WorkspaceTransfer(store)
    finally:
        store.close()


def migrate(url: str) -> dict[str, str | None]:
    """Bring the database at ``url`` to the newest schema: its backend, the revision it was
    at (``None``: empty), the one it is at now, and the newest there is."""
    with opening(url):  # a database it cannot open is said, before a revision is asked
        before = schema_revision(migration_url(url))
    open_store(url).close()  # opening migrates
    after = schema_revision(migration_url(url))
    backend = "postgresql" if is_postgres_url(url) else "sqlite"
    return {"backend": backend, "from": before, "to": after, "head": head_revision()}


def display_url(url: str) -> str:
    """``url`` as it may be printed: its password hidden."""
    return url_without_password(url)
