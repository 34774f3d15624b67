"""The lexical index on SQLite: one FTS5 table per workspace, so BM25 is per tenant.

FTS5's ``bm25()`` takes N (rows), avgdl and each term's df from the table it ranks. One table
for the whole file let every tenant's writes move every other tenant's scores (a side channel:
watch your own score for a rare word while another workspace stores it) and made a small
tenant's query walk a big tenant's postings. Each workspace therefore has a table of its own,
``memories_fts_<16 hex digits of sha256(workspace_id)>``, holding only that workspace's rows
(``rowid = memories.seq``): its statistics, postings and query cost are its own, and no
other workspace's write, purge or delete can change them. Within a workspace nothing changes:
a query over several of its contexts ranks with the workspace's statistics, as before.

* The table is created by the first write that needs it, inside that write's transaction (a
  rollback takes it away again), so a workspace that never stored a memory has none and a
  reader finds nothing to search (``lexical_search`` answers ``[]``).
* Deleted memories leave their FTS rows whatever deletes them (purge, Sleep, the context or
  workspace cascade, a hand-written ``DELETE``): one trigger on ``memories`` queues
  ``(workspace_id, seq)`` in ``lexical_deletions`` and ``drain_deletions`` removes the rows
  from each workspace's table before the write transaction commits (``SQLiteDatabase`` runs
  it). A trigger per workspace could not be used: SQLite compiles every trigger of a table
  into each ``DELETE`` on it, so a delete in one workspace would cost in proportion to the
  number of workspaces (about 10 ms a deleted row at 1,000 workspaces).
* 64 bits of a hash name the table: workspace ids are server-minted uuid4s, so two of them
  sharing a table is as likely as a 64-bit collision. Every query still filters its hits by
  ``workspace_id`` against ``memories`` (``filter_sql``).
* kioku has no workspace deletion; one would drop the workspace's table once its rows are gone.
* Migration 0009 moved the rows of the old shared ``memories_fts`` into these tables; it
  writes the same DDL (kept beside it, frozen, as migrations are).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections import defaultdict

from kioku.storage.sqlite.filters import chunked, placeholders

PREFIX = "memories_fts_"


def lexical_table(workspace_id: str) -> str:
    """The FTS5 table holding ``workspace_id``'s tokens (it may not exist yet)."""
    return PREFIX + hashlib.sha256(workspace_id.encode()).hexdigest()[:16]


def ensure_lexical_table(conn: sqlite3.Connection, workspace_id: str) -> str:
    """Create the workspace's FTS5 table if missing and return its name.

    Call inside the write transaction that is about to write tokens: about 10 µs when the
    table exists, and a rollback of that transaction undoes a creation too.
    """
    table = lexical_table(workspace_id)
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5("
        "tokens, tokenize = 'unicode61 remove_diacritics 0')"
    )
    return table


def drain_deletions(conn: sqlite3.Connection) -> None:
    """Remove the FTS rows of the memories deleted in this transaction (queued by the
    ``memories_lexical_delete`` trigger), each from its own workspace's table."""
    queued = conn.execute("SELECT workspace_id, seq FROM lexical_deletions").fetchall()
    if not queued:
        return
    by_workspace: dict[str, list[str]] = defaultdict(list)
    for workspace_id, seq in queued:
        by_workspace[workspace_id].append(str(seq))
    for workspace_id, seqs in by_workspace.items():
        table = lexical_table(workspace_id)
        for chunk in chunked(seqs):
            try:
                conn.execute(f"DELETE FROM {table} WHERE rowid IN ({placeholders(chunk)})", chunk)
            except sqlite3.OperationalError as exc:
                if not is_missing_table(exc, table):
                    raise
                break  # a workspace whose table was never made has nothing to remove
    conn.execute("DELETE FROM lexical_deletions")


def lexical_tables(conn: sqlite3.Connection) -> list[str]:
    """Every workspace's FTS5 table in the file (not their shadow tables)."""
    rows = conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name GLOB ? "
        "AND sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name",
        (PREFIX + "*",),
    ).fetchall()
    return [row[0] for row in rows]


def is_missing_table(exc: sqlite3.OperationalError, table: str) -> bool:
    """Whether ``exc`` says ``table`` does not exist (a workspace that never wrote)."""
    return str(exc) == f"no such table: {table}"
