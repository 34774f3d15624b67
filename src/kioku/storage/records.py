"""Plain records that cross the storage boundary (dataclasses inside, Pydantic at the edges)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# Shared with kioku.search (which never imports storage): defined in kioku.ranking_records.
from kioku.ranking_records import RankingSignals as RankingSignals
from kioku.ranking_records import ScoredId as ScoredId
from kioku.ranking_records import VersionSignals as VersionSignals
from kioku.vocabulary import (
    AuditOutcome,
    DeliveryMode,
    EdgeOrigin,
    EmbeddingStatus,
    KeyRole,
    SleepMode,
    SourceType,
    TrustTier,
)


@dataclass(frozen=True)
class WorkspaceRow:
    id: str
    name: str
    created_at: datetime


@dataclass(frozen=True)
class ContextRow:
    id: str
    workspace_id: str
    name: str
    description: str
    trust_tier: TrustTier
    sleep_mode: SleepMode
    search_config: dict[str, Any]
    embedding_model: str | None
    embedding_dim: int | None
    created_at: datetime
    updated_at: datetime
    memory_count: int | None = None
    """Live memories; only listings count them (``None`` elsewhere)."""
    connector_id: str | None = None
    """The connector the context is bound to (always ``external`` then), if any."""


@dataclass(frozen=True, kw_only=True)
class MemoryFields:
    """What a memory holds whether stored (``MemoryRow``) or about to be (``NewMemory``)."""

    id: str
    context_id: str
    summary: str
    content: str
    type: str
    tags: list[str]
    importance: float
    delivery_mode: DeliveryMode
    trigger_from: datetime | None
    trigger_until: datetime | None
    source_type: SourceType
    source_uri: str | None
    trust_tier: TrustTier
    created_at: datetime
    instruction_like: bool | None = None
    """The detector's verdict on the text (``None``: not judged yet); exposed as ``suspicious``
    only on external memories."""
    external_id: str | None = None
    """The source's own id (a Slack thread ts, a Markdown section); unique per owner among
    the live memories of a context."""
    external_owner: str | None = None
    """Who wrote ``external_id`` (``ingest:<actor>``, ``slack:<source>``, ``markdown``): only
    that channel sees, updates or deletes the memory by its external id."""
    tainted: bool = False
    """External whatever its context: connector text, or derived from external text."""
    thread: str | None = None
    """The ordered thread the memory belongs to (a chat session, a Slack thread, a file)."""
    thread_position: int | None = None
    """Its place in ``thread`` (0, 1, 2, ...); set whenever ``thread`` is."""


@dataclass(frozen=True, kw_only=True)
class MemoryRow(MemoryFields):
    """A stored memory (keyword arguments only)."""

    workspace_id: str
    embedding_status: EmbeddingStatus
    access_count: int
    last_accessed_at: datetime | None
    superseded_by: str | None
    updated_at: datetime
    deleted_at: datetime | None


@dataclass(frozen=True, kw_only=True)
class NewMemory(MemoryFields):
    """A fully decided memory, ready to insert: the service has validated and stamped it."""

    lexical_tokens: str


@dataclass(frozen=True)
class MemoryFilter:
    """Recall and list filters (docs/api.md, "Filters") after validation; ``None`` means "do
    not filter on this"."""

    types: list[str] | None = None
    tags_any: list[str] | None = None
    tags_all: list[str] | None = None
    importance_min: float | None = None
    importance_max: float | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    source_types: list[str] | None = None
    trust_tier: TrustTier | None = None
    delivery_modes: list[str] | None = None
    include_superseded: bool = False
    include_deleted: bool = False

    @property
    def is_narrowing(self) -> bool:
        """True if some filter beyond the default live-only rule applies."""
        return (
            any(
                value is not None
                for value in (
                    self.types,
                    self.tags_any,
                    self.tags_all,
                    self.importance_min,
                    self.importance_max,
                    self.created_after,
                    self.created_before,
                    self.source_types,
                    self.trust_tier,
                    self.delivery_modes,
                )
            )
            or self.include_superseded
            or self.include_deleted
        )


@dataclass(frozen=True)
class EmbeddingQueue:
    """Memories waiting for a vector: how many, and the oldest one's last write."""

    depth: int
    oldest: datetime | None


@dataclass(frozen=True)
class PoolStatistics:
    """This process's PostgreSQL connection pool (psycopg_pool's own counters): connections
    open and allowed, borrowers waiting now; since the start, how many borrows had to wait and
    for how long in all."""

    size: int
    max: int
    waiting: int
    queued: int
    wait_seconds: float


@dataclass(frozen=True)
class LexicalIndexStatistics:
    """The lexical indexes of large scopes held by this process (``lexical_sidecar``):
    workspaces indexed, memories they hold, seconds since the least recently synced index
    caught up; and how many searches of a large scope each answerer took (``index``, or
    ``database``: PostgreSQL's GIN leg, SQLite's FTS5)."""

    workspaces: int
    memories: int
    sync_age_seconds: float
    answered: dict[str, int]


@dataclass(frozen=True)
class EmbeddingJob:
    """A memory whose vector is missing, with the text to embed."""

    memory_id: str
    workspace_id: str
    context_id: str
    text: str


@dataclass(frozen=True)
class FeedbackFields:
    """One feedback event's content; ``actor`` and ``channel`` are stamped by the server."""

    id: str
    context_id: str
    memory_id: str
    helpful: bool
    query: str | None
    note: str | None
    actor: str
    channel: str
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class FeedbackRow(FeedbackFields):
    """One append-only feedback event as stored (its store-assigned ``seq``)."""

    seq: int
    workspace_id: str


@dataclass(frozen=True)
class NewFeedback(FeedbackFields):
    """A feedback event the service has validated and stamped."""


@dataclass(frozen=True)
class StateRow:
    """One live key of the agent state lane; ``value`` is the JSON text."""

    context_id: str
    key: str
    value: str
    expires_at: datetime | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class ContextCounts:
    """How many rows of each lane a context holds (``stats``)."""

    live: int
    deleted: int
    superseded: int
    pinned: int
    triggered: int
    external: int
    embedding: dict[str, int]
    state_keys: int
    helpful: int
    unhelpful: int


@dataclass(frozen=True)
class ApiKeyRow:
    """An API key as stored: never the key itself, only its SHA-256 and a display prefix."""

    id: str
    workspace_id: str
    name: str
    prefix: str
    key_hash: str
    role: KeyRole
    context_ids: list[str] | None
    created_by: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None


@dataclass(frozen=True)
class AuditEvent:
    """One line of the append-only audit log (``seq`` is set by the store)."""

    workspace_id: str | None
    at: datetime
    actor: str
    channel: str
    action: str
    outcome: AuditOutcome
    context_id: str | None = None
    target: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    seq: int = 0


@dataclass(frozen=True)
class AuditScope:
    """The part of a workspace's audit log a key with a context allow-list reads: lines about
    one of ``context_ids``, lines written by one of ``key_ids``, and context-less lines whose
    target is one of ``key_ids`` (a key created or revoked)."""

    context_ids: frozenset[str]
    key_ids: frozenset[str]

    @property
    def actors(self) -> list[str]:
        return sorted(f"key:{key_id}" for key_id in self.key_ids)


@dataclass(frozen=True)
class OAuthGrant:
    """A consent ticket, code, access or refresh token (stored under the hash of its secret).

    ``family`` ties together everything one consent produced, so a refresh token reused after
    rotation (a sign of theft) revokes the whole family.
    """

    secret_hash: str
    kind: str
    client_id: str
    workspace_id: str | None
    key_id: str | None
    scopes: list[str]
    params: dict[str, Any]
    family: str
    expires_at: datetime
    created_at: datetime
    revoked_at: datetime | None = None


@dataclass
class MemoryChanges:
    """Columns to change on one memory; ``lexical_tokens``/``text_changed`` say what to redo."""

    values: dict[str, Any] = field(default_factory=dict)
    lexical_tokens: str | None = None
    text_changed: bool = False


EMBED_MAX_CHARS = 2048
"""How much of a memory is embedded: its summary, then its content, cut after this many
characters (about 500 English tokens, one or two 512-token windows of the bundled model; up to
about four windows of Japanese). The cost of embedding one memory is bounded by it, whatever
its size; the whole text stays searchable through the lexical (BM25) leg, which indexes all of
it (docs/concepts.md, "What is embedded")."""


def embedding_text(summary: str, content: str) -> str:
    """The text a memory is embedded from: its summary, then its content, at most
    ``EMBED_MAX_CHARS`` characters of them."""
    text = f"{summary}\n{content}" if content else summary
    return text[:EMBED_MAX_CHARS]


@dataclass(frozen=True)
class EdgeRow:
    """One undirected edge of the association graph, stored once with ``source_id < target_id``
    (code point order). ``trust_tier`` is ``external`` when either end is."""

    workspace_id: str
    context_id: str
    source_id: str
    target_id: str
    weight: float
    origin: EdgeOrigin
    trust_tier: TrustTier
    created_at: datetime
    updated_at: datetime

    @property
    def pair(self) -> tuple[str, str]:
        return (self.source_id, self.target_id)

    def other(self, memory_id: str) -> str:
        """The end that is not ``memory_id``."""
        return self.target_id if memory_id == self.source_id else self.source_id


@dataclass(frozen=True)
class EdgeChange:
    """What one graph write did to one pair: ``before`` is ``None`` for a new edge, ``after``
    ``None`` for a deleted one. Undo by writing ``before`` back (or deleting ``after``)."""

    before: EdgeRow | None
    after: EdgeRow | None


@dataclass(frozen=True)
class ConnectorRow:
    """A source feeding a workspace (a Slack export, an ingestion worker)."""

    id: str
    workspace_id: str
    kind: str
    name: str
    config: dict[str, Any]
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class PurgeScope:
    """What a purge erases: a whole context's contents, or the memories whose ``source_uri``
    starts with ``source_prefix`` (in ``context_id`` only, if given)."""

    context_id: str | None = None
    source_prefix: str | None = None

    def named_contexts(self) -> list[str]:
        """The context the scope names, if any (its index is reset even when nothing matched)."""
        return [self.context_id] if self.context_id is not None else []


@dataclass(frozen=True)
class PurgeCounts:
    """What a purge removed, row by row."""

    memories: int = 0
    vectors: int = 0
    edges: int = 0
    feedback: int = 0
    state_keys: int = 0
    sleep_actions: int = 0
    ingest_requests: int = 0
