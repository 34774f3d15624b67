"""The ``Embedder`` protocol: text in, unit-length float32 vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class Embedder(Protocol):
    """Turns text into vectors. ``name`` and ``dim`` are recorded per context."""

    @property
    def name(self) -> str:
        """Model identity recorded per context (changing it needs an explicit re-embed)."""
        ...

    @property
    def dim(self) -> int:
        """Vector length."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed memories to be stored: shape ``(len(texts), dim)``, rows of unit length."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query: shape ``(dim,)``, unit length."""
        ...


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale each row to unit length (zero rows stay zero) as float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)
