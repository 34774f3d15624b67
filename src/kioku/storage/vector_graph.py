"""The approximate half of the SQLite vector index: an HNSW graph over one context's vectors.

A thin layer over usearch (chosen by measurement against faiss-cpu's HNSW: docs/scaling.md).
The graph only *proposes* candidates; ``ContextVectors`` scores them exactly against its own
float32 matrix, so a score never depends on the graph, and the graph keeps its own copy of the
vectors in 8 bits (``STORAGE_DTYPE``).

Every insertion gets a fresh integer key; the graph maps keys back to memory ids itself, and a
key that is not in that map (removed, replaced) is dropped from every answer, whatever the
library returns. usearch removes by tombstone: the node keeps routing searches but is never a
result; past ``MAX_TOMBSTONE_SHARE`` of dead nodes the owner rebuilds the graph.

Search on a given graph is deterministic (a greedy walk, no randomness). Building is too when
done on one thread in a fixed order, which is how ``build`` does it: the same rows in the same
order give the same graph, so a rebuilt index answers like the one it replaces.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from usearch.index import Index

CONNECTIVITY = 16
"""Graph degree (HNSW's M): usearch's default."""
EXPANSION_ADD = 128
"""Candidate list while inserting (HNSW's efConstruction): usearch's default."""
EXPANSION_SEARCH = 128
"""Candidate list while searching (HNSW's ef); a search for more rows widens it to that many."""
STORAGE_DTYPE = "i8"
"""How the graph keeps its copy of the vectors: 8-bit, a quarter of float32, half the build time
of f16 for the same candidates within 1.5 points of recall (results are re-scored in float32)."""
MAX_TOMBSTONE_SHARE = 0.25
"""Above this share of removed nodes the graph is rebuilt rather than walked around."""
FORMAT = 1
"""Bumped when the persisted form changes; a graph of another format is rebuilt."""
CHECK_ROWS = 4096
"""Rows per slice when a persisted graph's vectors are checked against the matrix."""
"""Bumped when the persisted form changes; a graph of another format is rebuilt."""


class HnswGraph:
    """An HNSW graph of memory ids, with its key bookkeeping."""

    def __init__(self, dim: int, index: Index, key_of: dict[str, int]) -> None:
        self.dim = dim
        self._index = index
        self._index.expansion_search = EXPANSION_SEARCH
        self.key_of = key_of
        self._id_of = {key: memory_id for memory_id, key in key_of.items()}
        self._next_key = max(key_of.values(), default=-1) + 1
        self.tombstones = 0

    @classmethod
    def build(cls, dim: int, ids: Sequence[str], matrix: np.ndarray) -> HnswGraph:
        """A new graph over ``ids`` (rows of ``matrix``), inserted in order on one thread."""
        graph = cls(dim, _new_index(dim), {})
        graph.add(ids, matrix)
        return graph

    @property
    def size(self) -> int:
        """Live nodes (removed ones not counted)."""
        return len(self.key_of)

    @property
    def is_worn(self) -> bool:
        """Too many tombstones: rebuilding is cheaper than walking around them."""
        return self.tombstones > MAX_TOMBSTONE_SHARE * max(self.size, 1)

    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Insert (or replace) ``ids`` with ``vectors``, one row each."""
        if not len(ids):
            return
        for memory_id in ids:
            self.remove(memory_id)
        keys = np.arange(self._next_key, self._next_key + len(ids), dtype=np.uint64)
        self._next_key += len(ids)
        # One thread: a multi-threaded insert depends on scheduling, and so would the graph.
        self._index.add(keys, np.ascontiguousarray(vectors, dtype=np.float32), threads=1)
        for memory_id, key in zip(ids, keys.tolist(), strict=True):
            self.key_of[memory_id] = key
            self._id_of[key] = memory_id

    def remove(self, memory_id: str) -> None:
        key = self.key_of.pop(memory_id, None)
        if key is None:
            return
        del self._id_of[key]
        self._index.remove(np.uint64(key))
        self.tombstones += 1

    def search(self, query: np.ndarray, count: int) -> list[str]:
        """Up to ``count`` live ids near ``query``, nearest first (approximately)."""
        if count <= 0 or not self.key_of:
            return []
        matches = self._index.search(query.astype(np.float32, copy=False), count, threads=1)
        found = (self._id_of.get(key) for key in matches.keys.tolist())
        return [memory_id for memory_id in found if memory_id is not None]

    def to_bytes(self) -> np.ndarray:
        """The graph as bytes (with its vectors); the keys travel beside it (``key_of``)."""
        saved = self._index.save()  # no path: the bytes (a bytearray, viewed without a copy)
        assert saved is not None
        return np.frombuffer(saved, dtype=np.uint8)

    @classmethod
    def from_bytes(
        cls, blob: np.ndarray, key_of: dict[str, int], ids: list[str], matrix: np.ndarray
    ) -> HnswGraph | None:
        """A persisted graph, or ``None`` unless it holds exactly ``ids`` (rows of ``matrix``)
        under the keys of ``key_of``, each key's stored vector pointing where its row does
        (then it is rebuilt: never trusted beyond what can be checked)."""
        dim = matrix.shape[1]
        index = _index_class().restore(blob.data)  # copied in: no second copy first
        if index is None or index.ndim != dim or not len(index) == len(key_of) == len(ids):
            return None
        for start in range(0, len(ids), CHECK_ROWS):
            chunk = ids[start : start + CHECK_ROWS]
            if not _holds(index, [key_of[memory_id] for memory_id in chunk], matrix[start:]):
                return None
        return cls(dim, index, key_of)


def _holds(index: Index, keys: list[int], rows: np.ndarray) -> bool:
    """Whether ``index`` stores each of ``keys`` with a vector pointing where the matching
    row of ``rows`` does (checked a slice at a time, so a 100k graph needs no second float32
    copy of every vector to be checked)."""
    wanted = np.array(keys, dtype=np.uint64)
    if not bool(np.all(index.contains(wanted))):
        return False
    found = index.get(wanted, dtype="f32")
    if found is None or any(row is None for row in found):
        return False
    stored = np.vstack(list(found)).astype(np.float32, copy=False)
    expected = rows[: len(keys)]
    norms = np.linalg.norm(stored, axis=1) * np.linalg.norm(expected, axis=1)
    cosines = np.einsum("ij,ij->i", stored, expected) / np.maximum(norms, 1e-12)
    return bool(np.all(cosines > 0.99))  # 8-bit storage: ~0.9999 when right


def _index_class() -> type[Index]:
    """usearch's ``Index``, loaded on first use, after onnxruntime when that is installed.

    usearch's extension links libstdc++ statically and exports its unique symbols (locale
    facet ids); a libstdc++ loaded after it (onnxruntime's, the bundled embedder's) then
    crashes while initialising: ``import usearch.index; import onnxruntime`` is a segfault,
    the other order works. So the embedder's runtime is loaded first."""
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401

    from usearch.index import Index

    return Index


def _new_index(dim: int) -> Index:
    return _index_class()(
        ndim=dim,
        metric="cos",
        dtype=STORAGE_DTYPE,
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )
