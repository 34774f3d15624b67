"""The agent state lane: TTL key/value run-state of a loop in progress (docs/concepts.md).

A separate table, never embedded, never indexed, never recalled. Expiry is lazy: every read
filters ``expires_at > now``, and a read that finds expired rows in its context sweeps them.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from kioku.clock import Clock, system_clock
from kioku.errors import InvalidInputError, NotFoundError, PayloadTooLargeError
from kioku.models import MAX_STATE_TTL, STATE_KEY_PATTERN, State, StatePage, StateSet
from kioku.models.json_input import exceeds_depth
from kioku.service.contexts import ContextService
from kioku.service.cursors import pack_cursor, unpack_cursor
from kioku.service.guard import operation
from kioku.service.principal import Principal
from kioku.storage.ports import StatePort
from kioku.storage.records import StateRow

MAX_PAGE = 1000


def clamp_ttl(ttl_seconds: int | None) -> tuple[int | None, bool]:
    """``ttl_seconds`` clamped to [1 s, 30 days] (``None`` stays: no expiry); and if it moved."""
    if ttl_seconds is None:
        return None, False
    clamped = max(1, min(MAX_STATE_TTL, ttl_seconds))
    return clamped, clamped != ttl_seconds


def encode_state_value(value: object, max_bytes: int) -> str:
    """Compact JSON text of a value; 422 if it is not JSON, 413 if it is over the cap."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        raise InvalidInputError(
            "value must be a JSON value (no NaN or Infinity)", field="value"
        ) from None
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise PayloadTooLargeError(
            f"value is {size} bytes as JSON; the limit is {max_bytes}", field="value"
        )
    return text


def stored_value(text: str) -> object:
    """A stored value as served. One nested deeper than ``MAX_JSON_DEPTH`` (written before
    that limit existed) cannot be sent as JSON: it is served as its JSON text instead, so
    reading the key, or the context's state, never fails."""
    try:
        value = json.loads(text)
    except RecursionError:
        return text
    return text if exceeds_depth(value) else value


def state_view(row: StateRow, now: datetime, *, ttl_clamped: bool = False) -> State:
    """The wire form of a stored key, with the seconds it has left at ``now``."""
    left = None
    if row.expires_at is not None:
        left = max(0, int((row.expires_at - now).total_seconds()))
    return State(
        context_id=row.context_id,
        key=row.key,
        value=stored_value(row.value),
        expires_at=row.expires_at,
        expires_in_seconds=left,
        ttl_clamped=ttl_clamped,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def check_key(key: str) -> str:
    """1-256 characters, no control characters and no ``/`` (keys live in URL paths)."""
    if not isinstance(key, str) or not STATE_KEY_PATTERN.match(key):
        raise InvalidInputError(
            "key must be 1-256 characters without control characters or '/'", field="key"
        )
    return key


class StateService:
    """set_state / get_state / list_state / delete_state."""

    def __init__(
        self,
        store: StatePort,
        contexts: ContextService,
        *,
        max_value_bytes: int,
        clock: Clock = system_clock,
    ) -> None:
        self.store = store
        self.contexts = contexts
        self.max_value_bytes = max_value_bytes
        self.clock = clock

    @operation("write", audited=True)
    def set_state(self, principal: Principal, context_ref: str, key: str, data: StateSet) -> State:
        """Upsert ``key``: last writer wins. TTL default 24 h, clamped to [1 s, 30 days]."""
        context = self.contexts.resolve(principal, context_ref)
        check_key(key)
        text = encode_state_value(data.value, self.max_value_bytes)
        ttl, clamped = clamp_ttl(data.ttl_seconds)
        now = self.clock()
        expires_at = None if ttl is None else now + timedelta(seconds=ttl)
        row = self.store.set_state(principal.workspace_id, context.id, key, text, expires_at, now)
        return state_view(row, now, ttl_clamped=clamped)

    @operation("read")
    def get_state(self, principal: Principal, context_ref: str, key: str) -> State:
        """One live key; an expired key is reported exactly like a missing one (404)."""
        context = self.contexts.resolve(principal, context_ref)
        check_key(key)
        now = self.clock()
        row = self.store.get_state(principal.workspace_id, context.id, key, now)
        self.store.sweep_state(principal.workspace_id, context.id, now)
        if row is None:
            raise NotFoundError(f"state key {key!r} not found", field="key")
        return state_view(row, now)

    @operation("read")
    def list_state(
        self,
        principal: Principal,
        context_ref: str,
        *,
        cursor: str | None = None,
        limit: int = 100,
    ) -> StatePage:
        """Every live key of a context, in key order, keyset-paginated."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInputError(f"limit must be between 1 and {MAX_PAGE}", field="limit")
        context = self.contexts.resolve(principal, context_ref)
        after = unpack_cursor(cursor, str)[0] if cursor else None
        now = self.clock()
        rows = self.store.list_state(principal.workspace_id, context.id, now, after, limit + 1)
        self.store.sweep_state(principal.workspace_id, context.id, now)
        next_cursor = pack_cursor(rows[limit - 1].key) if len(rows) > limit else None
        return StatePage(items=[state_view(r, now) for r in rows[:limit]], next_cursor=next_cursor)

    @operation("write", audited=True)
    def delete_state(self, principal: Principal, context_ref: str, key: str) -> None:
        """Remove a key; 404 if it is missing or already expired."""
        context = self.contexts.resolve(principal, context_ref)
        check_key(key)
        if not self.store.delete_state(principal.workspace_id, context.id, key, self.clock()):
            raise NotFoundError(f"state key {key!r} not found", field="key")
