"""``SQLiteStore``: the ``Store`` protocol on one SQLite file (WAL) + FTS5 (a table per
workspace) + the vector cache + the lexical index of large workspaces (``lexical_sidecar``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kioku.storage.migrations import upgrade_database
from kioku.storage.records import LexicalIndexStatistics
from kioku.storage.shared.areas import SharedAreas
from kioku.storage.shared.database import Database
from kioku.storage.shared.graph import GraphStore
from kioku.storage.shared.memories import Lexicon
from kioku.storage.sqlite.bm25 import DocumentFrequencies
from kioku.storage.sqlite.connection import SQLiteDatabase
from kioku.storage.sqlite.dialect import SQLiteSql
from kioku.storage.sqlite.jobs import SQLiteJobArea
from kioku.storage.sqlite.lexical import drain_deletions
from kioku.storage.sqlite.lexical_sidecar import MIN_MEMORIES, LexicalSidecar
from kioku.storage.sqlite.lexicon import SQLiteLexicon
from kioku.storage.sqlite.sleep import SQLiteSleepArea
from kioku.storage.sqlite.vectors import SQLiteVectorArea
from kioku.storage.vector_index import VectorIndexCache


class SQLiteStore(
    SharedAreas,
    SQLiteVectorArea,
    SQLiteJobArea,
    GraphStore,
    SQLiteSleepArea,
):
    """The embedded backend. One instance per process per database file."""

    sql: Database  # the shared areas' view of ``db``
    lexicon: Lexicon

    def __init__(
        self,
        path: Path,
        *,
        index_dir: Path | None = None,
        exact_max: int | None = None,
        background_graphs: bool = True,
        lexical_index_min: int = MIN_MEMORIES,
    ) -> None:
        """``exact_max`` and ``background_graphs``: see ``VectorIndexCache``;
        ``lexical_index_min``: the workspace size from which the lexical leg takes its
        candidates from this process's tantivy index (``lexical_sidecar``; 0: never)."""
        self.path = path
        self.url = f"sqlite:///{path}"
        upgrade_database(self.url)  # creates the file 0600 first (storage/private_files.py)
        self.db = SQLiteDatabase(path, before_commit=drain_deletions)
        self.sql = SQLiteSql(self.db)
        self.lexicon = SQLiteLexicon()
        self.index = VectorIndexCache(
            index_dir if index_dir is not None else path.with_name(path.name + ".vectors"),
            exact_max=exact_max,
            background=background_graphs,
        )
        self.term_counts = DocumentFrequencies()
        self.lexical_sidecar = LexicalSidecar(self.db, lexical_index_min)

    def close(self) -> None:
        self.lexical_sidecar.close()
        self.index.flush()
        self.db.close()

    def pool_statistics(self) -> None:
        return None  # one connection per thread, no pool

    def lexical_index_statistics(self) -> LexicalIndexStatistics:
        return self.lexical_sidecar.statistics()

    def _vectors_removed(self, context_id: str, generation: int, memory_ids: Sequence[str]) -> None:
        self.index.apply(context_id, generation, removals=list(memory_ids))

    def _vectors_changed(self, context_ids: Sequence[str]) -> None:
        for context_id in context_ids:
            self.index.forget(context_id)
