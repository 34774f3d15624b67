"""The export file format, one record a line: stored rows ⇄ canonical JSON.

Canonical means one text for one value, whichever backend it came from: keys sorted, no
spaces, UTF-8 as is (``ensure_ascii=False``), timestamps ISO-8601 UTC with microseconds,
vectors base64 of little-endian float32. Numbers inside state values keep their exact decimal
text (read as ``Decimal``), so a value stored as text (SQLite) and one stored as ``jsonb``
(PostgreSQL, which prints numbers its own way) export identically and lose no digit.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    model_validator,
)

from kioku.models.base import (
    MAX_QUERY_CHARS,
    MAX_SUMMARY_CHARS,
    MAX_THREAD_CHARS,
    MAX_THREAD_POSITION,
    field_error,
)
from kioku.models.json_input import find_unstorable
from kioku.service.suspicious import memory_is_suspicious
from kioku.storage.records import (
    ConnectorRow,
    ContextRow,
    EdgeRow,
    FeedbackRow,
    MemoryRow,
    StateRow,
)
from kioku.storage.transfer import MemoryDump, TransferRow
from kioku.vocabulary import DeliveryMode, EmbeddingStatus, SleepMode, SourceType, TrustTier

# ---------------------------------------------------------------- canonical JSON


def canonical_json(value: Any) -> str:
    """The one JSON text of ``value`` (dicts, lists, str, int, float, Decimal, bool, None)."""
    if isinstance(value, dict):
        items = (f"{_string(key)}:{canonical_json(value[key])}" for key in sorted(value))
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(canonical_json(item) for item in value) + "]"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{value} is not a JSON number")
        # Plain digits, scale kept ("1.50", "100", "0.0000001"): PostgreSQL's numeric output.
        return format(value.copy_abs() if value.is_zero() else value, "f")
    # bool, int, float (repr: the shortest text that reads back as the same double), None.
    return json.dumps(value, allow_nan=False)


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def parse_json(text: str) -> Any:
    """JSON with exact numbers: decimals as ``Decimal``; NaN and Infinity refused."""
    return json.loads(text, parse_float=Decimal, parse_constant=_no_constant)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _floats(value: Any) -> Any:
    """``Decimal`` → ``float`` all the way down (for columns the stores write with ``json``)."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {key: _floats(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_floats(item) for item in value]
    return value


def _time(value: datetime | None) -> str | None:
    return (
        None
        if value is None
        else value.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"
    )


# ---------------------------------------------------------------- rows → records


def encode_row(row: TransferRow) -> dict[str, Any]:
    """The record of one stored row (without the workspace: the file names it once)."""
    if isinstance(row, ConnectorRow):
        return {
            "kind": "connector", "id": row.id, "connector_kind": row.kind, "name": row.name,
            "config": row.config, "created_at": _time(row.created_at),
            "updated_at": _time(row.updated_at),
        }  # fmt: skip
    if isinstance(row, ContextRow):
        return {
            "kind": "context", "id": row.id, "name": row.name, "description": row.description,
            "trust_tier": row.trust_tier, "sleep_mode": row.sleep_mode,
            "search_config": row.search_config, "embedding_model": row.embedding_model,
            "embedding_dim": row.embedding_dim, "created_at": _time(row.created_at),
            "updated_at": _time(row.updated_at), "connector_id": row.connector_id,
        }  # fmt: skip
    if isinstance(row, MemoryDump):
        m = row.row
        embedding = None
        if row.vector is not None:
            vector = np.ascontiguousarray(row.vector, dtype="<f4")
            embedding = {
                "model": row.embedding_model,
                "dim": int(vector.shape[0]),
                "vector": base64.b64encode(vector.tobytes()).decode("ascii"),
            }
        return {
            "kind": "memory", "id": m.id, "context_id": m.context_id, "summary": m.summary,
            "content": m.content, "type": m.type, "tags": m.tags, "importance": m.importance,
            "delivery_mode": m.delivery_mode, "trigger_from": _time(m.trigger_from),
            "trigger_until": _time(m.trigger_until), "source_type": m.source_type,
            "source_uri": m.source_uri, "trust_tier": m.trust_tier,
            "instruction_like": m.instruction_like, "embedding_status": m.embedding_status,
            "embedding": embedding, "access_count": m.access_count,
            "last_accessed_at": _time(m.last_accessed_at), "superseded_by": m.superseded_by,
            "created_at": _time(m.created_at), "updated_at": _time(m.updated_at),
            "deleted_at": _time(m.deleted_at), "external_id": m.external_id,
            "external_owner": m.external_owner, "tainted": m.tainted, "thread": m.thread,
            "thread_position": m.thread_position,
        }  # fmt: skip
    if isinstance(row, EdgeRow):
        return {
            "kind": "edge", "context_id": row.context_id, "source_id": row.source_id,
            "target_id": row.target_id, "weight": row.weight, "origin": row.origin,
            "trust_tier": row.trust_tier, "created_at": _time(row.created_at),
            "updated_at": _time(row.updated_at),
        }  # fmt: skip
    if isinstance(row, FeedbackRow):
        return {
            "kind": "feedback", "id": row.id, "context_id": row.context_id,
            "memory_id": row.memory_id, "helpful": row.helpful, "query": row.query,
            "note": row.note, "actor": row.actor, "channel": row.channel,
            "created_at": _time(row.created_at),
        }  # fmt: skip
    return {
        "kind": "state", "context_id": row.context_id, "key": row.key,
        "value": parse_json(row.value), "expires_at": _time(row.expires_at),
        "created_at": _time(row.created_at), "updated_at": _time(row.updated_at),
    }  # fmt: skip


# ---------------------------------------------------------------- records → rows


def _timestamp(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError("expected an ISO-8601 timestamp string")
    parsed = datetime.fromisoformat(value)  # ValueError names the bad text
    if parsed.tzinfo is None:
        raise ValueError("timestamp without a time zone")
    return parsed.astimezone(UTC)


def _number(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise ValueError("expected a number")
    return float(value)


Id = Annotated[StrictStr, Field(min_length=1, max_length=128)]
Timestamp = Annotated[datetime, BeforeValidator(_timestamp)]
Fraction = Annotated[float, BeforeValidator(_number), Field(ge=0.0, le=1.0)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, data: Any) -> Any:
        # A file written from SQLite may hold a NUL, which PostgreSQL cannot store: the line
        # is refused, named, before anything is written (the request models' rule).
        if isinstance(data, dict) and (found := find_unstorable(data)) is not None:
            raise field_error(cls.__name__, found[0], "unstorable", found[1])
        return data


class ConnectorRecord(_Record):
    kind: Literal["connector"]
    id: Id
    connector_kind: Literal["slack", "ingest"]
    name: StrictStr = Field(min_length=1, max_length=200)
    config: dict[str, Any]
    created_at: Timestamp
    updated_at: Timestamp

    def to_row(self, workspace_id: str) -> ConnectorRow:
        return ConnectorRow(
            id=self.id, workspace_id=workspace_id, kind=self.connector_kind, name=self.name,
            config=_floats(self.config), created_at=self.created_at, updated_at=self.updated_at,
        )  # fmt: skip


class ContextRecord(_Record):
    kind: Literal["context"]
    id: Id
    name: StrictStr = Field(min_length=1, max_length=64)
    description: StrictStr
    trust_tier: TrustTier
    sleep_mode: SleepMode
    search_config: dict[str, Any]
    embedding_model: StrictStr | None
    embedding_dim: StrictInt | None = Field(gt=0)
    created_at: Timestamp
    updated_at: Timestamp
    connector_id: Id | None = None
    """Absent from files written before connectors: then ``None``."""

    def to_row(self, workspace_id: str) -> ContextRow:
        values = self.model_dump(exclude={"kind"})
        values["search_config"] = _floats(self.search_config)
        return ContextRow(workspace_id=workspace_id, **values)


class EmbeddingRecord(_Record):
    model: StrictStr = Field(min_length=1)
    dim: StrictInt = Field(gt=0)
    vector: StrictStr

    @model_validator(mode="after")
    def _decodes(self) -> EmbeddingRecord:
        try:
            raw = base64.b64decode(self.vector, validate=True)
        except ValueError:
            raise ValueError("vector is not base64") from None
        if len(raw) != 4 * self.dim:
            raise ValueError(f"vector holds {len(raw) / 4:g} float32 values, dim says {self.dim}")
        return self

    def array(self) -> np.ndarray:
        return np.frombuffer(base64.b64decode(self.vector), dtype="<f4").astype(np.float32)


class MemoryRecord(_Record):
    kind: Literal["memory"]
    id: Id
    context_id: Id
    summary: StrictStr = Field(min_length=1, max_length=MAX_SUMMARY_CHARS)
    content: StrictStr
    type: StrictStr = Field(min_length=1, max_length=64)
    tags: list[StrictStr]
    importance: Fraction
    delivery_mode: DeliveryMode
    trigger_from: Timestamp | None
    trigger_until: Timestamp | None
    source_type: SourceType
    source_uri: StrictStr | None
    trust_tier: TrustTier
    instruction_like: StrictBool | None
    """Written for the record; on import the tripwire judges the text again (a file may come
    from an older version, which read less of it, or may simply say ``false``)."""
    embedding_status: EmbeddingStatus
    embedding: EmbeddingRecord | None
    access_count: StrictInt = Field(ge=0)
    last_accessed_at: Timestamp | None
    superseded_by: StrictStr | None
    created_at: Timestamp
    updated_at: Timestamp
    deleted_at: Timestamp | None
    external_id: StrictStr | None = Field(default=None, min_length=1, max_length=512)
    """Absent from files written before connectors: then ``None``."""
    external_owner: StrictStr | None = Field(default=None, min_length=1, max_length=300)
    tainted: StrictBool | None = None
    """Both absent from files written before migration 0010: then decided as it decided."""
    thread: StrictStr | None = Field(default=None, min_length=1, max_length=MAX_THREAD_CHARS)
    thread_position: StrictInt | None = Field(default=None, ge=0, le=MAX_THREAD_POSITION)
    """Both absent from files written before migration 0011: then in no thread."""

    @model_validator(mode="after")
    def _consistent(self) -> MemoryRecord:
        # The database's CHECK constraints, said with the line number before anything is written.
        if (self.delivery_mode == "on_trigger") != (self.trigger_from is not None):
            raise ValueError("trigger_from is required exactly when delivery_mode is on_trigger")
        if self.trigger_until is not None and (
            self.trigger_from is None or self.trigger_until <= self.trigger_from
        ):
            raise ValueError("trigger_until must come after trigger_from")
        if (self.thread is None) != (self.thread_position is None):
            raise ValueError("thread and thread_position are set together or not at all")
        if (self.embedding_status == "ready") != (self.embedding is not None):
            raise ValueError("embedding is required exactly when embedding_status is ready")
        return self

    def to_dump(self, workspace_id: str, lexical_tokens: str) -> MemoryDump:
        values = self.model_dump(exclude={"kind", "embedding"})
        external = self.trust_tier == "external"
        values["instruction_like"] = (
            memory_is_suspicious(self.summary, self.content) if external else None
        )
        if values["tainted"] is None:
            values["tainted"] = self.source_type == "connector" or (
                self.source_type == "sleep" and self.trust_tier == "external"
            )
        if self.external_id is not None and self.external_owner is None:
            connector = self.source_type == "connector"
            values["external_owner"] = "ingest:legacy" if connector else "markdown"
        row = MemoryRow(workspace_id=workspace_id, **values)
        if self.embedding is None:
            return MemoryDump(row, None, None, lexical_tokens)
        return MemoryDump(row, self.embedding.model, self.embedding.array(), lexical_tokens)


class EdgeRecord(_Record):
    kind: Literal["edge"]
    context_id: Id
    source_id: Id
    target_id: Id
    weight: Fraction
    origin: Literal["hebbian", "declared", "sleep"]
    trust_tier: TrustTier
    created_at: Timestamp
    updated_at: Timestamp

    @model_validator(mode="after")
    def _consistent(self) -> EdgeRecord:
        # The database's CHECK constraints, said with the line number.
        if self.weight <= 0:
            raise ValueError("weight must be above 0")
        if not self.source_id < self.target_id:
            raise ValueError("source_id must come before target_id (code point order)")
        return self

    def to_row(self, workspace_id: str) -> EdgeRow:
        return EdgeRow(workspace_id=workspace_id, **self.model_dump(exclude={"kind"}))


class FeedbackRecord(_Record):
    kind: Literal["feedback"]
    id: Id
    context_id: Id
    memory_id: Id
    helpful: StrictBool
    query: StrictStr | None = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    note: StrictStr | None = Field(min_length=1, max_length=2000)
    actor: StrictStr = Field(min_length=1, max_length=200)
    channel: StrictStr
    created_at: Timestamp

    def to_row(self, workspace_id: str) -> FeedbackRow:
        return FeedbackRow(seq=0, workspace_id=workspace_id, **self.model_dump(exclude={"kind"}))


class StateRecord(_Record):
    kind: Literal["state"]
    context_id: Id
    key: StrictStr = Field(min_length=1, max_length=256)
    value: Any
    expires_at: Timestamp | None
    created_at: Timestamp
    updated_at: Timestamp

    def to_row(self) -> StateRow:
        values = self.model_dump(exclude={"kind", "value"})
        return StateRow(value=canonical_json(self.value), **values)


RECORDS: dict[str, type[_Record]] = {
    "connector": ConnectorRecord,
    "context": ContextRecord,
    "memory": MemoryRecord,
    "edge": EdgeRecord,
    "feedback": FeedbackRecord,
    "state": StateRecord,
}
"""The kinds of row records, in the order a file holds them."""
