"""Every area written once, composed: a backend inherits ``SharedAreas`` and adds its own
areas where its engine differs (search, vectors, the embedding claim, graph and Sleep writes)."""

from __future__ import annotations

from typing import Protocol

from kioku.storage.shared.candidates import CandidateStore
from kioku.storage.shared.connectors import ConnectorStore
from kioku.storage.shared.contexts import ContextStore
from kioku.storage.shared.database import Database
from kioku.storage.shared.delivery import DeliveryStore
from kioku.storage.shared.feedback import FeedbackStore
from kioku.storage.shared.keys import KeyStore
from kioku.storage.shared.memories import Lexicon, MemoryStore
from kioku.storage.shared.oauth import OAuthStore
from kioku.storage.shared.state import StateStore
from kioku.storage.shared.threads import ThreadStore
from kioku.storage.shared.transfer import TransferStore


class SharedAreas(
    ContextStore,
    MemoryStore,
    CandidateStore,
    ThreadStore,
    TransferStore,
    DeliveryStore,
    FeedbackStore,
    StateStore,
    KeyStore,
    OAuthStore,
    ConnectorStore,
    Protocol,
):
    """What a backend supplies them: ``sql`` (its connections and dialect), ``lexicon`` (where
    tokens live and how a batch of memories is inserted); and, if it caches vectors, its own
    ``_vectors_removed`` and ``_vectors_changed`` (the areas' are no-ops)."""

    sql: Database
    lexicon: Lexicon
