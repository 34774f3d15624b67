"""One workspace's memories in a tantivy index held by this process: where a lexical leg finds
its candidates in a large scope (``shared/lexical_sidecar.py``; PostgreSQL's and SQLite's legs
each score them exactly: ``postgres/lexical_sidecar.py``, ``sqlite/lexical_sidecar.py``).

At a million memories PostgreSQL's GIN index makes the leg read every posting of the query's
common words, and SQLite's FTS5 computes ``bm25()`` for every row holding a term; tantivy's
block-max WAND reads a few of them (docs/benchmarks-postgres-scale.md, "A tantivy sidecar";
docs/scaling.md). The index only proposes memories: the database scores them exactly, so what
this index holds may lag the database without changing a score.

What it holds: each live memory of the workspace as one document, its lexical tokens repeated
tf times (kioku's tokens, already normalised, split on spaces: tantivy's BM25 then counts the
same tf and length), its context and trust tier (raw terms, to search some contexts or one tier
only) and its key (a raw term, to delete it: the memory id on PostgreSQL, its ``seq`` on
SQLite), plus a ``row`` fast field: the position of its key in ``ids`` (reading a number per
hit is far cheaper than a stored text).

How it keeps up (``horizon``): it is built, then synced, from one consistent snapshot at a
time (``IndexSource``), remembering that snapshot's horizon: a number every later change to a
memory's searchable text, context, tier or liveness exceeds (PostgreSQL: ``pg_snapshot_xmin``
against ``lexical_xid``, migration 0017; SQLite: a clock against ``lexical_change``, migration
0020). A sync reads the memories changed since the previous horizon. Any memory whose current
row differs from what the index holds is therefore changed since the horizon, which a search
reads from the database. A memory deleted outright leaves no row to read: the search reports
the keys it proposed and the database no longer has (``forget``), and the next sync deletes
them (re-reading each, so a key written again in the meantime stays).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

SPACE = "\x1f"
"""Stands for the space inside a digest lexeme (``postgres/codec.lexeme``): tantivy splits on
spaces."""
WRITER_HEAP = 50_000_000
"""The index writer's memory budget (bytes) before it flushes a segment."""

IndexedRow = Mapping[str, Any]
"""A memory as the index reads it: ``key``, ``context_id``, ``trust_tier``, ``body`` (its
tokens, space-separated, each tf times) and ``live`` (not soft-deleted)."""


class Snapshot(Protocol):
    """One consistent read of a workspace's memories."""

    horizon: int
    """Every change this snapshot does not see has a greater stamp than this."""

    def live(self) -> Iterable[IndexedRow]:
        """Every live memory of the workspace."""
        ...

    def changed(self, since: int, named: Sequence[str]) -> Iterable[IndexedRow]:
        """The memories keyed ``named`` whose last change the horizon ``since`` covers, then
        every memory changed after it (soft-deleted ones too: ``live`` false), oldest change
        first."""
        ...


class IndexSource(Protocol):
    """Where an index reads a workspace: a backend's database."""

    def snapshot(self, workspace_id: str) -> AbstractContextManager[Snapshot]: ...


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

    def __init__(self, workspace_id: str, source: IndexSource) -> None:
        import tantivy  # lazily: only a large scope needs it

        self._tantivy = tantivy
        self.workspace_id = workspace_id
        self.source = source
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
        """The key of each ``row`` (append-only: an edited memory gets a new row)."""
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

    def build(self, stop: threading.Event | None = None) -> int:
        """Index every live memory of the workspace (one snapshot); the number indexed.
        ``stop`` set: it gives up (``BuildStopped``), unpublished."""
        self._writer = self._index.writer(heap_size=WRITER_HEAP, num_threads=1)
        with self.source.snapshot(self.workspace_id) as snapshot:
            count = 0
            for row in snapshot.live():
                self._add(row)
                count += 1
                if stop is not None and count % 5000 == 0 and stop.is_set():
                    raise BuildStopped(self.workspace_id)
            horizon = snapshot.horizon
        self._publish(horizon)
        return count

    def sync(self) -> int:
        """Apply what changed since the horizon, and re-read the memories ``forget`` named
        (deleted from the index unless a row with that key is back); the number of rows read."""
        with self._syncing:
            return self._sync()

    def _sync(self) -> int:
        view = self.view
        if view is None:
            raise RuntimeError("sync before build")
        with self._lock:
            gone = sorted(self._gone)
        read = 0
        with self.source.snapshot(self.workspace_id) as snapshot:
            for key in gone:  # a key written again is added back below
                self._writer.delete_documents_by_term("id", key)
            for row in snapshot.changed(view.horizon, gone):
                # The delete only reaches the documents added before it: the old version.
                self._writer.delete_documents_by_term("id", row["key"])
                if row["live"]:
                    self._add(row)
                read += 1
            horizon = snapshot.horizon
        if not read and not gone:  # nothing to commit: the same documents, a newer horizon
            self.view = IndexView(view.searcher, horizon)
            self.synced_at = time.monotonic()
            return 0
        self._publish(horizon)
        with self._lock:
            self._gone.difference_update(gone)
        return read

    def forget(self, keys: Iterable[str]) -> None:
        """Keys the database no longer has: deleted from the index at the next sync."""
        with self._lock:
            self._gone.update(keys)

    def top(
        self,
        view: IndexView,
        terms: Sequence[str],
        context_ids: Sequence[str],
        n: int,
        trust_tier: str | None = None,
    ) -> list[str]:
        """The keys of the best ``n`` memories of ``context_ids`` (and ``trust_tier``, if
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

    def _add(self, row: IndexedRow) -> None:
        document = self._tantivy.Document(
            body=row["body"], context=row["context_id"], tier=row["trust_tier"], id=row["key"]
        )
        if row["context_id"] not in self.contexts:  # replaced whole: searches read it freely
            self.contexts = self.contexts | {row["context_id"]}
        document.add_unsigned("row", len(self.ids))
        self.ids.append(row["key"])
        self._writer.add_document(document)

    def _publish(self, horizon: int) -> None:
        self._writer.commit()
        self._index.reload()
        self.view = IndexView(self._index.searcher(), horizon)
        self.synced_at = time.monotonic()

    def size(self) -> int:
        """The live documents of the current view."""
        return 0 if self.view is None else int(self.view.searcher.num_docs)
