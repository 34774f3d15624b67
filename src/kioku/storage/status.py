"""What a backend says about its own process for ``/health`` and ``/metrics``: the database it
runs on, and the connection pool and lexical indexes it holds (an engine has them or not)."""

from __future__ import annotations

from typing import Protocol

from kioku.storage.records import LexicalIndexStatistics, PoolStatistics


class StatusStore(Protocol):
    """A backend's own status: nothing tenant-scoped, nothing read from the tables."""

    url: str

    def pool_statistics(self) -> PoolStatistics | None:
        """This process's connection pool; ``None`` where the engine has none (SQLite)."""
        ...

    def lexical_index_statistics(self) -> LexicalIndexStatistics | None:
        """This process's lexical indexes of large scopes (``None``: the engine has none)."""
        ...
