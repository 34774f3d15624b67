"""``kioku migrate``: bring the configured database to the newest schema and say where it is.

``kioku serve`` migrates on start too; this command lets an operator do it (and see the
revision) before rolling out new replicas.
"""

from __future__ import annotations

from kioku.cli.common import JsonOption, console, handle_errors, print_json
from kioku.settings import Settings


def migrate(as_json: bool = JsonOption) -> None:
    """Migrate the database at KIOKU_DATABASE_URL to the newest schema revision."""
    from kioku.storage import open_store
    from kioku.storage.migrations import head_revision, schema_revision
    from kioku.storage.urls import is_postgres_url, migration_url

    url = Settings().database_url
    with handle_errors():
        before = schema_revision(migration_url(url))
        open_store(url).close()  # opening migrates
        after = schema_revision(migration_url(url))
    backend = "postgresql" if is_postgres_url(url) else "sqlite"
    result = {"backend": backend, "from": before, "to": after, "head": head_revision()}
    if as_json:
        print_json(result)
    elif before == after:
        console.print(f"{backend} database already at {after} (newest)")
    else:
        console.print(f"{backend} database migrated from {before or 'empty'} to {after}")
