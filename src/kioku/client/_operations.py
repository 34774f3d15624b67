"""Every REST operation, written once: the one place the SDK knows routes, shapes and defaults.

Each method builds the ``Call`` of its operation; ``@operation`` makes it a blocking method of
``Client`` and a coroutine method of ``AsyncClient`` (``kioku.client._dispatch``). What is sent
follows ``kioku.client._wire``: ``None`` leaves a field out; an update sends the fields it is
given (``None`` as null) and ``set_state`` leaves ``ttl_seconds`` alone when it is ``UNSET``. A
resource's fields are typed once (``ContextFields``, ``MemoryFields``) for its create and update.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict, Unpack

from kioku.client._dispatch import operation
from kioku.client._transport import Call, nothing
from kioku.client._wire import (
    LIST_FILTERS,
    PINNED_FILTERS,
    UNSET,
    Filters,
    Unset,
    changed,
    filter_params,
    given,
    jsonable,
    path,
)
from kioku.models import (
    ApiKeyCreated,
    ApiKeyPage,
    AuditPage,
    BatchResult,
    Confidence,
    Context,
    ContextPage,
    ContextStats,
    DeliveryMode,
    ExploreResult,
    Feedback,
    FeedbackPage,
    ForgetMatch,
    ForgetResult,
    Health,
    IngestResult,
    KeyRole,
    Memory,
    MemoryCreate,
    MemoryDetail,
    MemoryPage,
    PinnedResult,
    PurgeResult,
    RecallResult,
    SleepMode,
    State,
    StatePage,
    TrustTier,
    UpcomingResult,
)
from kioku.models.sleep import SleepReport, SleepRollback


class ContextFields(TypedDict, total=False):
    """The settable fields of a context, for ``create_context`` and ``update_context``."""

    description: str | None
    trust_tier: TrustTier | None
    sleep_mode: SleepMode | None
    search_config: Mapping[str, Any] | None


class ContextChanges(ContextFields, total=False):
    """What ``update_context`` may change: the fields above and the name."""

    name: str


class MemoryFields(TypedDict, total=False):
    """The editable fields of a memory, for ``remember`` and ``update_memory``."""

    content: str | None
    type: str | None
    tags: Sequence[str] | None
    importance: float | None
    delivery_mode: DeliveryMode | None
    trigger_from: datetime | None
    trigger_until: datetime | None
    source_uri: str | None


class MemoryChanges(MemoryFields, total=False):
    """What ``update_memory`` may change: the fields above and the summary."""

    summary: str


class Page(TypedDict, total=False):
    """Which page of a listing: ``cursor`` is the previous page's ``next_cursor``."""

    cursor: str | None
    limit: int | None


class Operations:
    """The methods ``Client`` and ``AsyncClient`` share, named like the REST operations."""

    # ------------------------------------------------------------ contexts

    @operation
    def create_context(self, name: str, **fields: Unpack[ContextFields]) -> Call[Context]:
        """Create a named memory space (ConflictError if the name is taken)."""
        body = given(name=name, **fields)
        return Call("POST", path("contexts"), Context.model_validate_json, body=body)

    @operation
    def list_contexts(self) -> Call[ContextPage]:
        """Every context of the workspace, by name."""
        return Call("GET", path("contexts"), ContextPage.model_validate_json)

    @operation
    def get_context(self, context_id: str) -> Call[Context]:
        """One context, by id or name."""
        return Call("GET", path("contexts", context_id), Context.model_validate_json)

    @operation
    def update_context(self, context_id: str, **changes: Unpack[ContextChanges]) -> Call[Context]:
        """Change the given fields of a context (``None`` sets a field to null)."""
        url = path("contexts", context_id)
        return Call("PATCH", url, Context.model_validate_json, body=changed(**changes))

    @operation
    def delete_context(self, context_id: str) -> Call[None]:
        """Delete a context and all its memories, for good."""
        return Call("DELETE", path("contexts", context_id), nothing)

    @operation
    def stats(self, context_id: str) -> Call[ContextStats]:
        """Counts per lane of a context (memories, pinned, external, state keys, feedback)."""
        url = path("contexts", context_id, "stats")
        return Call("GET", url, ContextStats.model_validate_json)

    # ------------------------------------------------------------ sleep

    @operation
    def sleep(self, context_id: str, *, mode: str | None = None) -> Call[SleepReport]:
        """Consolidate a context now (``mode``: ``edges_only`` or ``full``; default the
        context's sleep_mode) and return the run with every action."""
        url = path("contexts", context_id, "sleep")
        return Call("POST", url, SleepReport.model_validate_json, body=given(mode=mode))

    @operation
    def sleep_report(self, run_id: str) -> Call[SleepReport]:
        """One Sleep run with every action it logged."""
        return Call("GET", path("sleep", run_id), SleepReport.model_validate_json)

    @operation
    def rollback_sleep(self, run_id: str) -> Call[SleepRollback]:
        """Restore what a Sleep run changed (admin; the context's latest run only)."""
        url = path("sleep", run_id, "rollback")
        return Call("POST", url, SleepRollback.model_validate_json)

    # ------------------------------------------------------------ memories

    @operation
    def remember(
        self,
        context_id: str,
        summary: str,
        *,
        linked_memory_ids: Sequence[str] | None = None,
        thread: str | None = None,
        position: int | None = None,
        wait: bool = False,
        **fields: Unpack[MemoryFields],
    ) -> Call[Memory]:
        """Write one memory; ``wait=True`` returns once it is vector-searchable."""
        body = given(
            summary=summary,
            linked_memory_ids=linked_memory_ids,
            thread=thread,
            position=position,
            **fields,
        )
        url = path("contexts", context_id, "memories")
        params = {"wait": True} if wait else None
        return Call("POST", url, Memory.model_validate_json, params=params, body=body)

    @operation
    def remember_batch(
        self,
        context_id: str,
        items: Sequence[MemoryCreate | Mapping[str, Any]],
        *,
        atomic: bool = False,
        wait: bool = False,
    ) -> Call[BatchResult]:
        """Write up to 100 memories with a result per item (``atomic``: all or nothing)."""
        url = path("contexts", context_id, "memories", "batch")
        body = {"items": jsonable(items), "atomic": atomic, "wait": wait}
        return Call("POST", url, BatchResult.model_validate_json, body=body)

    @operation
    def list_memories(
        self,
        context_id: str,
        *,
        filters: Filters | None = None,
        **page: Unpack[Page],
    ) -> Call[MemoryPage]:
        """Memories newest first, one page at a time (pass ``next_cursor`` back as ``cursor``)."""
        params = {**filter_params(filters, LIST_FILTERS), **given(**page)}
        url = path("contexts", context_id, "memories")
        return Call("GET", url, MemoryPage.model_validate_json, params=params)

    @operation
    def get_memory(
        self, context_id: str, memory_id: str, *, include_deleted: bool = False
    ) -> Call[MemoryDetail]:
        """One memory in full, with its edges (counts as an access)."""
        url = path("contexts", context_id, "memories", memory_id)
        params = {"include_deleted": True} if include_deleted else None
        return Call("GET", url, MemoryDetail.model_validate_json, params=params)

    @operation
    def update_memory(
        self, context_id: str, memory_id: str, **changes: Unpack[MemoryChanges]
    ) -> Call[Memory]:
        """Change the given fields of a memory (re-embeds only if its text changed; ``None``
        clears a trigger or the source)."""
        url = path("contexts", context_id, "memories", memory_id)
        return Call("PATCH", url, Memory.model_validate_json, body=changed(**changes))

    @operation
    def forget(self, context_id: str, memory_id: str) -> Call[None]:
        """Soft-delete a memory: gone from recall and listings, kept for audit."""
        return Call("DELETE", path("contexts", context_id, "memories", memory_id), nothing)

    @operation
    def forget_by_query(
        self,
        context_id: str,
        query: str | None = None,
        *,
        filters: Filters | None = None,
        match: ForgetMatch | None = None,
        k: int | None = None,
        confirmation: str | None = None,
    ) -> Call[ForgetResult]:
        """Forget what ``query`` (or ``filters`` alone) match, in two calls. Without
        ``confirmation``: a preview, nothing forgotten, listing exactly what would go and a
        ``confirmation``; the same call with it forgets exactly those (soft delete), or raises
        ``ConflictError`` if what the call matches changed since."""
        url = path("contexts", context_id, "memories", "forget")
        body = given(query=query, filters=filters, match=match, k=k, confirmation=confirmation)
        return Call("POST", url, ForgetResult.model_validate_json, body=body)

    @operation
    def purge(self, context_id: str, memory_id: str) -> Call[None]:
        """Erase a memory for good (text, tokens and vector)."""
        url = path("contexts", context_id, "memories", memory_id)
        return Call("DELETE", url, nothing, params={"purge": True})

    # ------------------------------------------------------------ connectors and purge

    @operation
    def ingest(
        self,
        context_id: str,
        ops: Sequence[Mapping[str, Any]],
        *,
        idempotency_key: str | None = None,
        wait: bool = False,
    ) -> Call[IngestResult]:
        """Upsert/delete up to 100 documents by ``external_id`` (a connector key, or an admin);
        the same ``idempotency_key`` again returns the first answer and writes nothing."""
        url = path("contexts", context_id, "ingest")
        headers = None if idempotency_key is None else {"Idempotency-Key": idempotency_key}
        body = {"ops": jsonable(ops), "wait": wait}
        return Call("POST", url, IngestResult.model_validate_json, body=body, headers=headers)

    @operation
    def purge_context(self, context_id: str) -> Call[PurgeResult]:
        """Erase every memory of a context and every trace of them (admins)."""
        url = path("contexts", context_id, "purge")
        return Call("POST", url, PurgeResult.model_validate_json)

    @operation
    def purge_source(
        self, source_uri_prefix: str, *, context_id: str | None = None
    ) -> Call[PurgeResult]:
        """Erase every memory whose ``source_uri`` starts with the prefix (admins)."""
        body = given(source_uri_prefix=source_uri_prefix, context_id=context_id)
        return Call("POST", path("purge"), PurgeResult.model_validate_json, body=body)

    # ------------------------------------------------------------ recall and delivery

    @operation
    def recall(
        self,
        context_id: str,
        query: str,
        *,
        k: int | None = None,
        filters: Filters | None = None,
        include_related: bool = False,
        min_confidence: Confidence | None = None,
    ) -> Call[RecallResult]:
        """The ``k`` memories that best answer ``query`` (BM25 + vectors, fused, re-ranked);
        ``include_related``: their graph neighbours too, as ``related``; ``min_confidence``:
        no results unless the set is at least this sure (``withheld`` counts them)."""
        url = path("contexts", context_id, "recall")
        body = given(
            query=query,
            k=k,
            filters=filters,
            include_related=include_related or None,
            min_confidence=min_confidence,
        )
        return Call("POST", url, RecallResult.model_validate_json, body=body)

    @operation
    def explore(
        self,
        context_id: str,
        memory_id: str,
        *,
        depth: int | None = None,
        min_weight: float | None = None,
        limit: int | None = None,
        filters: Filters | None = None,
    ) -> Call[ExploreResult]:
        """Spreading activation from one memory: neighbours with activation and path."""
        params = {
            **filter_params(filters, PINNED_FILTERS),
            **given(depth=depth, min_weight=min_weight, limit=limit),
        }
        url = path("contexts", context_id, "memories", memory_id, "explore")
        return Call("GET", url, ExploreResult.model_validate_json, params=params)

    @operation
    def load_pinned(
        self, context_id: str, *, cap: int | None = None, filters: Filters | None = None
    ) -> Call[PinnedResult]:
        """The memories to show every turn (``always`` + open triggers), in a stable order."""
        params = {**filter_params(filters, PINNED_FILTERS), **given(cap=cap)}
        url = path("contexts", context_id, "pinned")
        return Call("GET", url, PinnedResult.model_validate_json, params=params)

    @operation
    def claude_code_hook(
        self,
        event: Mapping[str, Any],
        *,
        contexts: Sequence[str] | None = None,
        trust: str | None = None,
        capture: bool | None = None,
        min_confidence: str | None = None,
    ) -> Call[dict[str, Any]]:
        """What a Claude Code hook adds to a turn for ``event`` (the hook's input JSON):
        ``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}`` or ``{}``."""
        params = {
            **({"context": list(contexts)} if contexts else {}),
            **given(trust=trust, capture=capture, min_confidence=min_confidence),
        }
        return Call(
            "POST", path("hooks", "claude-code"), json.loads, params=params, body=dict(event)
        )

    @operation
    def upcoming(
        self,
        context_id: str,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        cap: int | None = None,
    ) -> Call[UpcomingResult]:
        """``on_trigger`` memories whose window meets [start, end) (default: the next 7 days)."""
        params = given(**{"from": start, "until": end, "cap": cap})
        url = path("contexts", context_id, "upcoming")
        return Call("GET", url, UpcomingResult.model_validate_json, params=params)

    # ------------------------------------------------------------ feedback

    @operation
    def feedback(
        self,
        context_id: str,
        memory_id: str,
        helpful: bool,
        *,
        query: str | None = None,
        note: str | None = None,
    ) -> Call[Feedback]:
        """Record whether a memory helped (for ``query``); it nudges the re-ranker."""
        body = given(memory_id=memory_id, helpful=helpful, query=query, note=note)
        url = path("contexts", context_id, "feedback")
        return Call("POST", url, Feedback.model_validate_json, body=body)

    @operation
    def list_feedback(
        self,
        context_id: str,
        *,
        memory_id: str | None = None,
        **page: Unpack[Page],
    ) -> Call[FeedbackPage]:
        """Feedback events, newest first (pass ``next_cursor`` back as ``cursor``)."""
        params = given(memory_id=memory_id, **page)
        url = path("contexts", context_id, "feedback")
        return Call("GET", url, FeedbackPage.model_validate_json, params=params)

    # ------------------------------------------------------------ agent state

    @operation
    def set_state(
        self, context_id: str, key: str, value: Any, *, ttl_seconds: int | Unset | None = UNSET
    ) -> Call[State]:
        """Store a JSON value under ``key`` for 24 h, or ``ttl_seconds`` (None: forever)."""
        body = {"value": jsonable(value), **changed(ttl_seconds=ttl_seconds)}
        url = path("contexts", context_id, "state", key)
        return Call("PUT", url, State.model_validate_json, body=body)

    @operation
    def get_state(self, context_id: str, key: str) -> Call[State]:
        """One live key (NotFoundError once it has expired)."""
        return Call("GET", path("contexts", context_id, "state", key), State.model_validate_json)

    @operation
    def list_state(self, context_id: str, **page: Unpack[Page]) -> Call[StatePage]:
        """The live keys of a context in key order (pass ``next_cursor`` back as ``cursor``)."""
        url = path("contexts", context_id, "state")
        return Call("GET", url, StatePage.model_validate_json, params=given(**page))

    @operation
    def delete_state(self, context_id: str, key: str) -> Call[None]:
        """Remove a key (NotFoundError if it is missing or expired)."""
        return Call("DELETE", path("contexts", context_id, "state", key), nothing)

    # ------------------------------------------------------------ access: keys and audit

    @operation
    def create_key(
        self,
        name: str,
        *,
        role: KeyRole | None = None,
        context_ids: Sequence[str] | None = None,
        expires_at: datetime | None = None,
    ) -> Call[ApiKeyCreated]:
        """A new API key (admins); its secret ``key`` is in this answer only."""
        body = given(name=name, role=role, context_ids=context_ids, expires_at=expires_at)
        return Call("POST", path("keys"), ApiKeyCreated.model_validate_json, body=body)

    @operation
    def list_keys(self) -> Call[ApiKeyPage]:
        """Every key of the workspace, without secrets (admins)."""
        return Call("GET", path("keys"), ApiKeyPage.model_validate_json)

    @operation
    def revoke_key(self, key_id: str) -> Call[None]:
        """Revoke a key; it stops working at once (admins)."""
        return Call("DELETE", path("keys", key_id), nothing)

    @operation
    def list_audit(self, **page: Unpack[Page]) -> Call[AuditPage]:
        """The audit log, newest first (admins)."""
        return Call("GET", path("audit"), AuditPage.model_validate_json, params=given(**page))

    @operation
    def health(self) -> Call[Health]:
        """Liveness, version, database and embedder of the server."""
        return Call("GET", path("health"), Health.model_validate_json)
