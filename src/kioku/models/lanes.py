"""Wire models of the lanes that are never recalled (feedback, agent state) and health."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    StrictBool,
    StrictStr,
)

from kioku.models.base import MAX_QUERY_CHARS, InputModel, Timestamp
from kioku.vocabulary import AuditOutcome, KeyRole, TrustTier

# ---------------------------------------------------------------- feedback


class FeedbackCreate(InputModel):
    """Was this memory useful for this query? Appended, never updated; never recalled."""

    memory_id: StrictStr = Field(min_length=1, max_length=64)
    helpful: StrictBool
    query: StrictStr | None = Field(default=None, min_length=1, max_length=MAX_QUERY_CHARS)
    note: StrictStr | None = Field(default=None, min_length=1, max_length=2000)


class Feedback(BaseModel):
    """One feedback event; ``actor``, ``channel`` and ``created_at`` are stamped by the server."""

    feedback_id: str
    context_id: str
    memory_id: str
    helpful: bool
    query: str | None
    note: str | None
    actor: str
    channel: str
    created_at: datetime


class FeedbackPage(BaseModel):
    """Feedback events, newest first; pass ``next_cursor`` back for the next page."""

    items: list[Feedback]
    next_cursor: str | None


# ---------------------------------------------------------------- agent state

STATE_KEY_PATTERN = re.compile(r"^[^\x00-\x1f\x7f/]{1,256}$")
DEFAULT_STATE_TTL = 24 * 3600
MAX_STATE_TTL = 30 * 24 * 3600


class StateSet(InputModel):
    """A value for one key of the state lane. ``ttl_seconds: null`` keeps it forever."""

    value: Any = Field(description="Any JSON value (capped, default 16 KiB).")
    ttl_seconds: int | None = Field(
        default=DEFAULT_STATE_TTL,
        description="Seconds to live, default 24 h, clamped to [1 s, 30 days]; "
        "null (explicitly) for no expiry.",
    )


class State(BaseModel):
    """One live key of the agent state lane (never part of recall)."""

    context_id: str
    key: str
    value: Any
    expires_at: datetime | None
    expires_in_seconds: int | None = Field(description="Whole seconds left; null: never expires.")
    ttl_clamped: bool = Field(
        default=False, description="set_state only: the asked ttl_seconds was out of range."
    )
    created_at: datetime
    updated_at: datetime


class StatePage(BaseModel):
    """Live keys in key order; pass ``next_cursor`` back for the next page."""

    items: list[State]
    next_cursor: str | None


# ---------------------------------------------------------------- stats


class ContextStats(BaseModel):
    """Counts per lane of one context, the vector index's model, and the last Sleep run."""

    context_id: str
    name: str
    trust_tier: TrustTier
    memories: int = Field(description="Live memories (not deleted, not superseded).")
    deleted: int
    superseded: int
    pinned: int = Field(
        description="Memories not deleted with delivery_mode always (merged-away ones "
        "included: Sleep keeps them for rollback)."
    )
    triggered: int = Field(
        description="Memories not deleted with delivery_mode on_trigger (merged-away ones "
        "included)."
    )
    external: int = Field(
        description="Memories not deleted whose trust_tier is external (merged-away ones included)."
    )
    embeddings: dict[str, int] = Field(
        description="Memories not deleted by embedding_status (merged-away ones included: "
        "they keep their vector for rollback and include_superseded)."
    )
    embedding_model: str | None
    state_keys: int = Field(description="Live (unexpired) keys of the state lane.")
    feedback: dict[str, int] = Field(description="Feedback events: helpful, unhelpful.")
    last_sleep: datetime | None = Field(
        default=None, description="When Sleep last ran here (null: never)."
    )
    last_sleep_run_id: str | None = Field(default=None, description="For sleep_report.")
    last_sleep_status: str | None = None


class Health(BaseModel):
    """Liveness plus what the server runs on."""

    status: Literal["ok"]
    version: str
    database: str
    embedder: str
    embedding_queue: int


# ---------------------------------------------------------------- access: keys and audit

"""``connector``: a key that may only ingest (``POST /contexts/{id}/ingest``), stamped
``source_type=connector``; give it a context allow-list of the contexts it feeds."""


class KeyCreate(InputModel):
    """A new API key for the caller's workspace. Its secret is shown once, in the answer."""

    name: StrictStr = Field(min_length=1, max_length=100, description="What it is for.")
    role: KeyRole = "member"
    context_ids: list[StrictStr] | None = Field(
        default=None, max_length=100, description="Allow-list of contexts (ids or names)."
    )
    expires_at: Timestamp | None = None


class ApiKey(BaseModel):
    """An API key as listed: never the secret, only its first characters."""

    id: str
    name: str
    prefix: str
    role: KeyRole
    context_ids: list[str] | None
    created_by: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None


class ApiKeyCreated(ApiKey):
    """The new key, with its secret: store it now, it cannot be shown again."""

    key: str


class ApiKeyPage(BaseModel):
    """Every key of the workspace, oldest first (revoked ones included, marked)."""

    items: list[ApiKey]


class AuditEntry(BaseModel):
    """One line of the audit log."""

    seq: int
    at: datetime
    actor: str
    channel: str
    action: str
    outcome: AuditOutcome
    context_id: str | None
    target: str | None
    detail: dict[str, Any]


class AuditPage(BaseModel):
    """Audit lines, newest first; pass ``next_cursor`` back for older ones."""

    items: list[AuditEntry]
    next_cursor: str | None
