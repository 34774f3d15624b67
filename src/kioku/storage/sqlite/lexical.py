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
* A trigger per workspace deletes a memory's FTS row whatever deletes the memory (purge,
  Sleep, the context or workspace cascade): the invariant the single table's trigger kept.
  kioku has no workspace deletion; one would drop the table and its trigger
  (``DROP TRIGGER <table>_delete``, ``DROP TABLE <table>``) once the rows are gone.
* 64 bits of a hash name the table: workspace ids are server-minted uuid4s, so two of them
  sharing a table is as likely as a 64-bit collision. Every query still filters its hits by
  ``workspace_id`` against ``memories`` (``filter_sql``).
* Migration 0009 moved the rows of the old shared ``memories_fts`` into these tables; it
  writes the same DDL (kept beside it, frozen, as migrations are).
"""

from __future__ import annotations

import hashlib
import sqlite3

PREFIX = "memories_fts_"


def lexical_table(workspace_id: str) -> str:
    """The FTS5 table holding ``workspace_id``'s tokens (it may not exist yet)."""
    return PREFIX + hashlib.sha256(workspace_id.encode()).hexdigest()[:16]


def ensure_lexical_table(conn: sqlite3.Connection, workspace_id: str) -> str:
    """Create the workspace's FTS5 table and its delete trigger if missing; return its name.

    Call inside the write transaction that is about to write tokens: about 20 µs when the
    table exists, and a rollback of that transaction undoes a creation too.
    """
    table = lexical_table(workspace_id)
    literal = workspace_id.replace("'", "''")
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5("
        "tokens, tokenize = 'unicode61 remove_diacritics 0')"
    )
    conn.execute(
        f"CREATE TRIGGER IF NOT EXISTS {table}_delete AFTER DELETE ON memories "
        f"WHEN old.workspace_id = '{literal}' BEGIN "
        f"DELETE FROM {table} WHERE rowid = old.seq; END"
    )
    return table


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
