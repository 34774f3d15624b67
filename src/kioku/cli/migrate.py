"""``kioku migrate``: bring the configured database to the newest schema and say where it is.

``kioku serve`` migrates on start too; this command lets an operator do it (and see the
revision) before rolling out new replicas.
"""

from __future__ import annotations

from kioku.cli.common import JsonOption, console, handle_errors, print_json


def migrate(as_json: bool = JsonOption) -> None:
    """Migrate the database at KIOKU_DATABASE_URL to the newest schema revision."""
    from kioku.service.database_admin import migrate as migrate_database
    from kioku.settings import Settings

    with handle_errors():
        url = Settings().database.url
        result = migrate_database(url)
    backend, before, after = result["backend"], result["from"], result["to"]
    if as_json:
        print_json(result)
    elif before == after:
        console.print(f"{backend} database already at {after} (newest)")
    else:
        console.print(f"{backend} database migrated from {before or 'empty'} to {after}")
