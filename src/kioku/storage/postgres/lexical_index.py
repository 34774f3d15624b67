"""One workspace's memories in a tantivy index held by this replica: where the PostgreSQL
lexical leg finds its candidates in a large scope (``lexical_sidecar.py``).

At a million memories the GIN index makes the leg read every posting of the query's common
words; tantivy's block-max WAND reads a few of them (docs/benchmarks-postgres-scale.md, "A
tantivy sidecar"). The index only proposes memories: PostgreSQL scores them exactly, so what
this index holds may lag the database without changing a score.

What it holds: each live memory of the workspace as one document, its ``lexical_tokens``
repeated tf times (kioku's tokens, already normalised, split on spaces: tantivy's BM25 then
counts the same tf and length), its context and trust tier (raw terms, to search some
contexts or one tier only) and its id (a raw term, to delete it), plus a ``row`` fast
field: the position of its id in ``ids`` (reading a number per hit is far cheaper than a
stored text).

How it keeps up (``horizon``): it is built, then synced, from one REPEATABLE READ snapshot at
a time, remembering that snapshot's ``pg_snapshot_xmin`` (every transaction below it had
ended). A sync reads the memories whose ``lexical_xid`` (migration 0017: the transaction
that last changed their searchable text) is at or above the previous horizon. Any memory
whose current row differs from what the index holds therefore has ``lexical_xid >= horizon``,
which a search reads from the database (``lexical_sidecar``). A memory deleted outright
(``DELETE``, not a soft delete) leaves no row to read: the search reports the ids it proposed
and the database no longer has (``forget``), and the next sync deletes them (re-reading each
by id, so an id written again in the meantime stays).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from kioku.storage.postgres.connection import PostgresDatabase

SPACE = "\x1f"
"""Stands for the space inside a digest lexeme (``codec.lexeme``): tantivy splits on spaces."""
WRITER_HEAP = 50_000_000
"""The index writer's memory budget (bytes) before it flushes a segment."""
_BODY = (
    "coalesce((SELECT string_agg(repeat(replace(u.lexeme, ' ', chr(31)) || ' ', "
    "greatest(cardinality(u.positions), 1)), '') FROM unnest(m.lexical_tokens) u), '')"
)
"""A memory's tokens as the index's text: each lexeme tf times (as the leg counts tf)."""
_HORIZON = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS horizon"
_SYNCED = (
    "SELECT m.id, m.context_id, m.trust_tier, m.deleted_at IS NULL AS live, "
    f"{_BODY} AS body FROM memories m WHERE m.workspace_id = %s AND"
)
"""A sync's read of rows (the condition follows): what ``_add`` needs, and liveness."""


class BuildStopped(Exception):
    """The build gave up: the process is closing the store."""


def index_term(lexeme: str) -> str:
    """The index's term for a stored lexeme."""
    return lexeme.replace(" ", SPACE)


@dataclass(frozen=True)
class IndexView:
    """What a search reads, swapped whole after each sync: the searcher of one commit and the
    horizon of the snapshot that commit reflects."""

    searcher: Any
    horizon: int


class WorkspaceIndex:
    """The index of one workspace. ``build`` and ``sync`` run on one thread (the sidecar's);
    ``top``, ``view`` and ``forget`` from any thread."""

    def __init__(self, workspace_id: str) -> None:
        import tantivy  # lazily: only a PostgreSQL deployment with a large scope needs it

        self._tantivy = tantivy
        self.workspace_id = workspace_id
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("body", tokenizer_name="whitespace", index_option="freq")
        builder.add_text_field("context", tokenizer_name="raw", index_option="basic")
        builder.add_text_field("tier", tokenizer_name="raw", index_option="basic")
        builder.add_text_field("id", tokenizer_name="raw", index_option="basic")
        builder.add_unsigned_field("row", fast=True)
        self._schema = builder.build()
        self._index = tantivy.Index(self._schema)  # in memory (with ids: ~260 MiB at 1M)
        self._writer: Any = None
        self.ids: list[str] = []
        """The memory id of each ``row`` (append-only: an edited memory gets a new row)."""
        self.view: IndexView | None = None
        self.synced_at = 0.0
        """When the view last caught up with the database (``time.monotonic``)."""
        self.contexts: frozenset[str] = frozenset()
        """Every context a document was ever added with (a search of all of them needs no
        context clause: a required clause matching most documents slows tantivy's WAND)."""
        self._gone: set[str] = set()
        self._lock = threading.Lock()
        self._syncing = threading.Lock()
        """One sync at a time: tantivy's writer refuses a second thread ("Already borrowed");
        the sidecar's thread syncs on its interval, and a caller (a test) may sync too."""

    def build(self, db: PostgresDatabase, stop: threading.Event | None = None) -> int:
        """Index every live memory of the workspace (one snapshot); the number indexed.
        ``stop`` set: it gives up (``BuildStopped``), unpublished."""
        self._writer = self._index.writer(heap_size=WRITER_HEAP, num_threads=1)
        with db.transaction(self.workspace_id, snapshot=True) as conn:
            horizon = int(conn.execute(_HORIZON).fetchone()["horizon"])  # type: ignore[index]
            cursor = conn.cursor(name="kioku_lexical_index")
            cursor.itersize = 5000
            cursor.execute(
                f"SELECT m.id, m.context_id, m.trust_tier, {_BODY} AS body FROM memories m "
                "WHERE m.workspace_id = %s AND m.deleted_at IS NULL",
                (self.workspace_id,),
            )
            count = 0
            for row in cursor:
                self._add(row)
                count += 1
                if stop is not None and count % 5000 == 0 and stop.is_set():
                    raise BuildStopped(self.workspace_id)
            cursor.close()
        self._publish(horizon)
        return count

    def sync(self, db: PostgresDatabase) -> int:
        """Apply what changed since the horizon, and re-read the memories ``forget`` named
        (deleted from the index unless a row with that id is back); the number of rows read."""
        with self._syncing:
            return self._sync(db)

    def _sync(self, db: PostgresDatabase) -> int:
        view = self.view
        if view is None:
            raise RuntimeError("sync before build")
        with self._lock:
            gone = sorted(self._gone)
        read = 0
        with db.transaction(self.workspace_id, snapshot=True) as conn:
            horizon = int(conn.execute(_HORIZON).fetchone()["horizon"])  # type: ignore[index]
            rows = conn.execute(
                f"{_SYNCED} m.id = ANY(%s::text[]) "
                "AND (m.lexical_xid IS NULL OR m.lexical_xid < %s::xid8)",
                (self.workspace_id, gone, str(view.horizon)),
            ).fetchall() if gone else []  # fmt: skip
            cursor = conn.cursor(name="kioku_lexical_sync")  # streamed: a bulk load is large
            cursor.itersize = 5000
            cursor.execute(
                f"{_SYNCED} m.lexical_xid >= %s::xid8 ORDER BY m.lexical_xid",
                (self.workspace_id, str(view.horizon)),
            )
            for memory_id in gone:  # an id written again is added back below
                self._writer.delete_documents_by_term("id", memory_id)
            for row in chain(rows, cursor):
                # The delete only reaches the documents added before it: the old version.
                self._writer.delete_documents_by_term("id", row["id"])
                if row["live"]:
                    self._add(row)
                read += 1
            cursor.close()
        if not read and not gone:  # nothing to commit: the same documents, a newer horizon
            self.view = IndexView(view.searcher, horizon)
            self.synced_at = time.monotonic()
            return 0
        self._publish(horizon)
        with self._lock:
            self._gone.difference_update(gone)
        return read

    def forget(self, memory_ids: Iterable[str]) -> None:
        """Ids the database no longer has: deleted from the index at the next sync."""
        with self._lock:
            self._gone.update(memory_ids)

    def top(
        self,
        view: IndexView,
        terms: Sequence[str],
        context_ids: Sequence[str],
        n: int,
        trust_tier: str | None = None,
    ) -> list[str]:
        """The ids of the best ``n`` memories of ``context_ids`` (and ``trust_tier``, if
        given) holding any of ``terms`` (tantivy's BM25 over the whole workspace: a proposal,
        not the leg's score)."""
        tantivy = self._tantivy
        query_class, occur = tantivy.Query, tantivy.Occur
        words = query_class.boolean_query(
            [(occur.Should, query_class.term_query(self._schema, "body", index_term(term)))
             for term in terms]
        )  # fmt: skip
        clauses = [(occur.Must, words)]
        if not self.contexts <= set(context_ids):
            in_contexts = query_class.boolean_query(
                [(occur.Should, query_class.term_query(self._schema, "context", context))
                 for context in context_ids]
            )  # fmt: skip
            clauses.append((occur.Must, query_class.const_score_query(in_contexts, 0.0)))
        if trust_tier is not None:
            tier = query_class.term_query(self._schema, "tier", trust_tier)
            clauses.append((occur.Must, query_class.const_score_query(tier, 0.0)))
        query = query_class.boolean_query(clauses)
        hits = view.searcher.search(query, n, count=False).hits
        if not hits:
            return []
        rows = view.searcher.fast_field_values("row", [address for _, address in hits])
        ids = self.ids  # rows of a view are always below its length: ids grow before a commit
        return [ids[int(row)] for row in rows]

    def _add(self, row: Mapping[str, Any]) -> None:
        document = self._tantivy.Document(
            body=row["body"], context=row["context_id"], tier=row["trust_tier"], id=row["id"]
        )
        if row["context_id"] not in self.contexts:  # replaced whole: searches read it freely
            self.contexts = self.contexts | {row["context_id"]}
        document.add_unsigned("row", len(self.ids))
        self.ids.append(row["id"])
        self._writer.add_document(document)

    def _publish(self, horizon: int) -> None:
        self._writer.commit()
        self._index.reload()
        self.view = IndexView(self._index.searcher(), horizon)
        self.synced_at = time.monotonic()

    def size(self) -> int:
        """The live documents of the current view."""
        return 0 if self.view is None else int(self.view.searcher.num_docs)
