"""A deterministic embedder for unit tests: hashed bag of tokens, no model.

Texts sharing tokens get similar vectors, which is enough to exercise the vector leg,
fusion and the index without loading a model. Its real counterparts are tested in
``tests/integration``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from kioku.embeddings.base import normalize_rows
from kioku.search.tokenize import tokenize


class FakeEmbedder:
    """Hashing-trick embedder; ``calls`` counts documents embedded (to test re-embedding)."""

    def __init__(self, dim: int = 64, name: str = "fake-hash-64") -> None:
        self.dim = dim
        self.name = name
        self.calls = 0

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        for token in tokenize(text) or [text]:
            digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
            slot = int.from_bytes(digest[:4], "little") % self.dim
            vector[slot] += 1.0 if digest[4] & 1 else -1.0
        return vector

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += len(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalize_rows(np.stack([self._vector(text) for text in texts]))

    def embed_query(self, text: str) -> np.ndarray:
        return normalize_rows(self._vector(text)[None, :])[0]
