"""The ``Store`` protocol: the primitives a backend offers. Policy lives above it, in ``service/``.

Every method takes ``workspace_id`` first and every query a backend runs filters by it, so a
caller can never reach another tenant's rows by id.
"""

from __future__ import annotations

from typing import Protocol

from kioku.storage.shared.candidates import CandidateStore
from kioku.storage.shared.connectors import ConnectorStore
from kioku.storage.shared.contexts import ContextStore
from kioku.storage.shared.delivery import DeliveryStore
from kioku.storage.shared.embeddings import EmbeddingStore
from kioku.storage.shared.feedback import FeedbackStore
from kioku.storage.shared.graph import GraphStore
from kioku.storage.shared.jobs import JobStore
from kioku.storage.shared.keys import KeyStore
from kioku.storage.shared.legs import SearchLegs
from kioku.storage.shared.memories import MemoryStore
from kioku.storage.shared.oauth import OAuthStore
from kioku.storage.shared.state import StateStore
from kioku.storage.shared.threads import ThreadStore
from kioku.storage.shared.transfer import TransferStore
from kioku.storage.sleep import SleepStore
from kioku.storage.status import StatusStore


class Store(
    SearchLegs,
    ContextStore,
    MemoryStore,
    CandidateStore,
    TransferStore,
    SleepStore,
    GraphStore,
    EmbeddingStore,
    ConnectorStore,
    KeyStore,
    OAuthStore,
    DeliveryStore,
    FeedbackStore,
    StateStore,
    JobStore,
    ThreadStore,
    StatusStore,
    Protocol,
):
    """A storage backend (SQLite or PostgreSQL): one protocol per area, and the search legs,
    composed. See the contract tests. Services take narrow ports of it (``storage/ports.py``)."""

    url: str

    def close(self) -> None:
        """Release connections and persist caches."""
        ...
