"""Wire models of connector ingestion and purge."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, StrictBool, StrictStr

from kioku.models.base import MAX_SUMMARY_CHARS, MAX_TAGS, InputModel, Label

MAX_INGEST_OPS = 100
MAX_EXTERNAL_ID = 512


class IngestUpsert(InputModel):
    """Create the memory for ``external_id``, or update it in place if its text changed.

    No ``delivery_mode``: text from a connector is recalled, never pinned on its own say.
    """

    op: Literal["upsert"]
    external_id: StrictStr = Field(min_length=1, max_length=MAX_EXTERNAL_ID)
    summary: StrictStr = Field(max_length=MAX_SUMMARY_CHARS)
    content: StrictStr = ""
    type: Label = "note"
    tags: list[Label] = Field(default_factory=list, max_length=MAX_TAGS)
    importance: float = Field(default=0.5, ge=0.0, le=1.0, allow_inf_nan=False)
    source_uri: StrictStr | None = Field(default=None, max_length=2048)


class IngestDelete(InputModel):
    """Forget the live memory of ``external_id`` (soft delete; nothing to do if there is none)."""

    op: Literal["delete"]
    external_id: StrictStr = Field(min_length=1, max_length=MAX_EXTERNAL_ID)


class IngestRequest(InputModel):
    """Up to 100 ops, applied in order. Every op is checked before anything is written."""

    ops: list[dict[str, Any]] = Field(
        min_length=1,
        max_length=MAX_INGEST_OPS,
        description='{"op": "upsert", "external_id", "summary", ...} or '
        '{"op": "delete", "external_id"}.',
    )
    wait: StrictBool = False
    """If true, return only after every new or changed memory is embedded."""


IngestStatus = Literal["created", "updated", "unchanged", "deleted", "absent"]


class IngestOpResult(BaseModel):
    """What one op did: ``absent`` is a delete of an external id with no live memory."""

    index: int
    op: Literal["upsert", "delete"]
    external_id: str
    status: IngestStatus
    memory_id: str | None = None


class IngestResult(BaseModel):
    """Per-op results; a replay with the same ``Idempotency-Key`` returns the same answer."""

    created: int
    updated: int
    unchanged: int
    deleted: int
    absent: int
    results: list[IngestOpResult]


class PurgeSource(InputModel):
    """Erase every memory whose ``source_uri`` starts with ``source_uri_prefix``."""

    source_uri_prefix: StrictStr = Field(min_length=1, max_length=2048)
    context_id: StrictStr | None = Field(
        default=None, description="Only in this context (id or name); default: the workspace."
    )


class PurgeResult(BaseModel):
    """What a purge removed for good (rows, not just hidden)."""

    memories: int
    vectors: int
    edges: int
    feedback: int
    state_keys: int
    sleep_actions: int
    ingest_requests: int
