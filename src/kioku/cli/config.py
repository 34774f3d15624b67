"""``kioku config``: every setting's value in force and where it came from (docs/operations.md).

The server's settings come, highest first, from the environment (``KIOKU_PORT``), the settings
file (``[server] port``; ``KIOKU_CONFIG``, else ``config.toml`` in the user's config
directory) and the defaults; the client's (``client.*``) from the environment only. Secrets
(API keys, tokens, a password inside a URL) are shown as ``***``.
"""

from __future__ import annotations

import json
import sys

from kioku.cli.common import JsonOption, handle_errors


def config(as_json: bool = JsonOption) -> None:
    """Print every setting's value, its source (default, file, environment) and its variable."""
    from kioku.cli.human import Column, print_table
    from kioku.settings.report import as_json as report_json
    from kioku.settings.report import describe

    with handle_errors():
        path, rows = describe()
    if as_json:
        sys.stdout.write(json.dumps(report_json(path, rows), ensure_ascii=False) + "\n")
        return
    columns = [Column("setting", whole=True), Column("value"), Column("source", whole=True),
               Column("variable", whole=True)]  # fmt: skip
    shown = [(row.name, _shown(row.value), row.source, row.variable) for row in rows]
    print_table(columns, shown, title=f"settings file: {path or 'none'}")


def _shown(value: object) -> str:
    """A value for a person: lists comma-separated, none as ``-``, text as it is."""
    if value is None:
        return "-"
    if isinstance(value, list):
        return ",".join(str(item) for item in value) or "-"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value) if value != "" else '""'
