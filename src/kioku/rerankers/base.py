"""The ``Reranker`` protocol: a query and candidate texts in, one relevance score each out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class RerankError(Exception):
    """A reranker gave no usable answer. ``reason`` is short and safe to show and log: it
    never holds the endpoint's address or credentials."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Reranker(Protocol):
    """Scores how well each text answers the query; higher is more relevant."""

    @property
    def name(self) -> str:
        """What answers (for example ``tei`` or ``cohere:rerank-v3.5``), shown in recall."""
        ...

    def score(self, query: str, texts: Sequence[str]) -> list[float | None]:
        """One score per text, in the order given; ``None`` for a text the reranker left
        unscored (a service that returns only its top results). Raises ``RerankError``."""
        ...
