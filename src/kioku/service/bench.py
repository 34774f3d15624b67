"""What the bench and the gate (``kioku bench``, ``kioku eval``) need of the database beneath
the operations every surface calls.

The scale bench seeds up to a million memories: their rows go through ``remember_batch`` (the
real write path, timed), but embedding them with the bundled model would take hours, so their
synthetic vectors are stored as given, one batched write a chunk (docs/benchmarks.md). Before
it times recall it builds the indexes a backend otherwise builds in the background on a large
scope's first search, so the latencies are the steady state's. The gate's harvest reads the
memories feedback voted on without counting an access, which would nudge the re-ranker.

No permission is checked: only the bench and the gate call this, as the owner of the
workspaces they made on their own database.
"""

from __future__ import annotations

from collections.abc import Sequence

from kioku.service.principal import Principal
from kioku.storage.ports import BenchPort
from kioku.storage.records import MemoryFilter, MemoryRow
from kioku.storage.shared.embeddings import Vectors


class BenchService:
    """Bulk seeding, counts and index builds for the bench; plain reads for the gate."""

    def __init__(self, store: BenchPort) -> None:
        self.store = store

    def store_vectors(
        self, principal: Principal, context_id: str, model: str, items: Vectors
    ) -> int:
        """Store ``items`` (memory id, vector) as the vectors of those pending memories of the
        context, made by ``model``; returns how many landed."""
        return self.store.store_embeddings(principal.workspace_id, context_id, model, items)

    def count_memories(self, principal: Principal, context_id: str) -> int:
        """How many live memories the context holds."""
        return self.store.count_memories(principal.workspace_id, context_id)

    def build_vector_graph(self, principal: Principal, context_id: str) -> bool:
        """Build a large context's vector graph now (SQLite builds it in the background on the
        first search and answers exactly until then); ``True`` when the context has one,
        ``False`` on a backend without one (PostgreSQL's index is built by its bulk load)."""
        build = getattr(self.store, "build_vector_graph", None)
        return build is not None and bool(build(principal.workspace_id, context_id))

    def needs_lexical_index(self, principal: Principal, context_id: str) -> bool:
        """Whether the context's searches go to a large scope's lexical index (the store's
        ``lexical_sidecar``, built in the background on the first search)."""
        sidecar = getattr(self.store, "lexical_sidecar", None)
        if sidecar is None:
            return False
        return sidecar.applies(self.count_memories(principal, context_id), MemoryFilter())

    def wait_for_lexical_index(self, principal: Principal, timeout: float) -> bool:
        """Queue the workspace's lexical index and wait up to ``timeout`` seconds for it to be
        built; ``False`` if it was not (or the backend has none)."""
        sidecar = getattr(self.store, "lexical_sidecar", None)
        return sidecar is not None and bool(sidecar.wait_ready(principal.workspace_id, timeout))

    def memories_by_id(
        self, principal: Principal, memory_ids: Sequence[str]
    ) -> dict[str, MemoryRow]:
        """The memories of the workspace with these ids, forgotten ones included (a row's
        ``deleted_at`` says so), read without counting an access."""
        return self.store.get_memories(principal.workspace_id, memory_ids)
