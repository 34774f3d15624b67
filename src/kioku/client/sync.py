"""``kioku.Client``: every operation of a kioku server as a blocking method."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from kioku.client import _operations as ops
from kioku.client._operations import UNSET, Filters, Unset
from kioku.client._operations import ingest as ingest_call
from kioku.client._transport import (
    BlockingASGITransport,
    Call,
    http_options,
    read,
    request_options,
)
from kioku.models import (
    ApiKeyCreated,
    ApiKeyPage,
    AuditPage,
    BatchResult,
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

T = TypeVar("T")


class Client:
    """A kioku server over HTTP, or an ASGI app in this process (``app=``).

    ``base_url`` defaults to ``$KIOKU_URL``, then ``http://127.0.0.1:8765``; ``api_key`` to
    ``$KIOKU_API_KEY`` (sent as ``Authorization: Bearer``). ``app=create_app(runtime=...)``
    serves requests in-process, without a network (the app is not started: give it a runtime).

    Methods are named like the REST operations and return ``kioku.models`` objects. An error
    answer raises a ``KiokuError`` subclass (``NotFoundError``, ``InvalidInputError``, ...)
    carrying ``message``, ``field``, ``details`` and ``status_code``; a network failure raises
    the underlying ``httpx.TransportError`` (e.g. ``httpx.ConnectError``).
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        app: Any = None,
        timeout: float = 30.0,
    ) -> None:
        options = http_options(base_url, api_key, timeout, in_process=app is not None)
        transport = BlockingASGITransport(app) if app is not None else None
        self._http = httpx.Client(transport=transport, **options)

    @property
    def base_url(self) -> str:
        """The server this client talks to."""
        return str(self._http.base_url)

    def close(self) -> None:
        """Release the connections (or the in-process event loop)."""
        self._http.close()

    def __enter__(self) -> Self:
        self._http.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        self._http.__exit__(exc_type, exc_value, traceback)

    def _send(self, call: Call[T]) -> T:
        response = self._http.request(call.method, call.path, **request_options(call))
        return read(call, response)

    # ------------------------------------------------------------ contexts

    def create_context(
        self,
        name: str,
        *,
        description: str | None = None,
        trust_tier: TrustTier | None = None,
        sleep_mode: SleepMode | None = None,
        search_config: Mapping[str, Any] | None = None,
    ) -> Context:
        """Create a named memory space (ConflictError if the name is taken)."""
        return self._send(
            ops.create_context(
                name=name,
                description=description,
                trust_tier=trust_tier,
                sleep_mode=sleep_mode,
                search_config=search_config,
            )
        )

    def list_contexts(self) -> ContextPage:
        """Every context of the workspace, by name."""
        return self._send(ops.list_contexts())

    def get_context(self, context_id: str) -> Context:
        """One context, by id or name."""
        return self._send(ops.get_context(context_id))

    def update_context(
        self,
        context_id: str,
        *,
        name: str | Unset = UNSET,
        description: str | Unset = UNSET,
        trust_tier: TrustTier | Unset = UNSET,
        sleep_mode: SleepMode | Unset = UNSET,
        search_config: Mapping[str, Any] | Unset = UNSET,
    ) -> Context:
        """Change the given fields of a context."""
        return self._send(
            ops.update_context(
                context_id,
                name=name,
                description=description,
                trust_tier=trust_tier,
                sleep_mode=sleep_mode,
                search_config=search_config,
            )
        )

    def delete_context(self, context_id: str) -> None:
        """Delete a context and all its memories, for good."""
        return self._send(ops.delete_context(context_id))

    def stats(self, context_id: str) -> ContextStats:
        """Counts per lane of a context (memories, pinned, external, state keys, feedback)."""
        return self._send(ops.stats(context_id))

    def sleep(self, context_id: str, *, mode: str | None = None) -> SleepReport:
        """Consolidate a context now (``mode``: ``edges_only`` or ``full``; default the
        context's sleep_mode) and return the run with every action."""
        return self._send(ops.sleep(context_id, mode=mode))

    def sleep_report(self, run_id: str) -> SleepReport:
        """One Sleep run with every action it logged."""
        return self._send(ops.sleep_report(run_id))

    def rollback_sleep(self, run_id: str) -> SleepRollback:
        """Restore what a Sleep run changed (admin; the context's latest run only)."""
        return self._send(ops.rollback_sleep(run_id))

    # ------------------------------------------------------------ memories

    def remember(
        self,
        context_id: str,
        summary: str,
        *,
        content: str | None = None,
        type: str | None = None,
        tags: Sequence[str] | None = None,
        importance: float | None = None,
        delivery_mode: DeliveryMode | None = None,
        trigger_from: datetime | None = None,
        trigger_until: datetime | None = None,
        source_uri: str | None = None,
        linked_memory_ids: Sequence[str] | None = None,
        thread: str | None = None,
        position: int | None = None,
        wait: bool = False,
    ) -> Memory:
        """Write one memory; ``wait=True`` returns once it is vector-searchable."""
        return self._send(
            ops.remember(
                context_id,
                wait=wait,
                summary=summary,
                content=content,
                type=type,
                tags=tags,
                importance=importance,
                delivery_mode=delivery_mode,
                trigger_from=trigger_from,
                trigger_until=trigger_until,
                source_uri=source_uri,
                linked_memory_ids=linked_memory_ids,
                thread=thread,
                position=position,
            )
        )

    def remember_batch(
        self,
        context_id: str,
        items: Sequence[MemoryCreate | Mapping[str, Any]],
        *,
        atomic: bool = False,
        wait: bool = False,
    ) -> BatchResult:
        """Write up to 100 memories with a result per item (``atomic``: all or nothing)."""
        return self._send(ops.remember_batch(context_id, items=items, atomic=atomic, wait=wait))

    def list_memories(
        self,
        context_id: str,
        *,
        filters: Filters | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> MemoryPage:
        """Memories newest first, one page at a time (pass ``next_cursor`` back as ``cursor``)."""
        return self._send(
            ops.list_memories(context_id, filters=filters, cursor=cursor, limit=limit)
        )

    def get_memory(
        self, context_id: str, memory_id: str, *, include_deleted: bool = False
    ) -> MemoryDetail:
        """One memory in full, with its edges (counts as an access)."""
        return self._send(ops.get_memory(context_id, memory_id, include_deleted=include_deleted))

    def update_memory(
        self,
        context_id: str,
        memory_id: str,
        *,
        summary: str | Unset = UNSET,
        content: str | Unset = UNSET,
        type: str | Unset = UNSET,
        tags: Sequence[str] | Unset = UNSET,
        importance: float | Unset = UNSET,
        delivery_mode: DeliveryMode | Unset = UNSET,
        trigger_from: datetime | Unset | None = UNSET,
        trigger_until: datetime | Unset | None = UNSET,
        source_uri: str | Unset | None = UNSET,
    ) -> Memory:
        """Change the given fields of a memory (re-embeds only if its text changed)."""
        return self._send(
            ops.update_memory(
                context_id,
                memory_id,
                summary=summary,
                content=content,
                type=type,
                tags=tags,
                importance=importance,
                delivery_mode=delivery_mode,
                trigger_from=trigger_from,
                trigger_until=trigger_until,
                source_uri=source_uri,
            )
        )

    def forget(self, context_id: str, memory_id: str) -> None:
        """Soft-delete a memory: gone from recall and listings, kept for audit."""
        return self._send(ops.forget(context_id, memory_id))

    def forget_by_query(
        self,
        context_id: str,
        query: str | None = None,
        *,
        filters: Filters | None = None,
        match: ForgetMatch | None = None,
        k: int | None = None,
        confirmation: str | None = None,
    ) -> ForgetResult:
        """Forget what ``query`` (or ``filters`` alone) match, in two calls. Without
        ``confirmation``: a preview, nothing forgotten, listing exactly what would go and a
        ``confirmation``; the same call with it forgets exactly those (soft delete), or raises
        ``ConflictError`` if what the call matches changed since."""
        call = ops.forget_by_query(
            context_id, query=query, filters=filters, match=match, k=k,
            confirmation=confirmation,
        )  # fmt: skip
        return self._send(call)

    def purge(self, context_id: str, memory_id: str) -> None:
        """Erase a memory for good (text, tokens and vector)."""
        return self._send(ops.forget(context_id, memory_id, purge=True))

    # ------------------------------------------------------------ connectors and purge

    def ingest(
        self,
        context_id: str,
        ops: Sequence[Mapping[str, Any]],
        *,
        idempotency_key: str | None = None,
        wait: bool = False,
    ) -> IngestResult:
        """Upsert/delete up to 100 documents by ``external_id`` (a connector key, or an admin);
        the same ``idempotency_key`` again returns the first answer and writes nothing."""
        return self._send(
            ingest_call(context_id, ops=ops, wait=wait, idempotency_key=idempotency_key)
        )

    def purge_context(self, context_id: str) -> PurgeResult:
        """Erase every memory of a context and every trace of them (admins)."""
        return self._send(ops.purge_context(context_id))

    def purge_source(self, source_uri_prefix: str, *, context_id: str | None = None) -> PurgeResult:
        """Erase every memory whose ``source_uri`` starts with the prefix (admins)."""
        return self._send(
            ops.purge_source(source_uri_prefix=source_uri_prefix, context_id=context_id)
        )

    # ------------------------------------------------------------ recall and delivery

    def recall(
        self,
        context_id: str,
        query: str,
        *,
        k: int | None = None,
        filters: Filters | None = None,
        include_related: bool = False,
    ) -> RecallResult:
        """The ``k`` memories that best answer ``query`` (BM25 + vectors, fused, re-ranked);
        ``include_related``: their graph neighbours too, as ``related``."""
        call = ops.recall(
            context_id, query=query, k=k, filters=filters, include_related=include_related
        )
        return self._send(call)

    def explore(
        self,
        context_id: str,
        memory_id: str,
        *,
        depth: int | None = None,
        min_weight: float | None = None,
        limit: int | None = None,
        filters: Filters | None = None,
    ) -> ExploreResult:
        """Spreading activation from one memory: neighbours with activation and path."""
        call = ops.explore(
            context_id, memory_id, depth=depth, min_weight=min_weight, limit=limit,
            filters=filters,
        )  # fmt: skip
        return self._send(call)

    def load_pinned(
        self, context_id: str, *, cap: int | None = None, filters: Filters | None = None
    ) -> PinnedResult:
        """The memories to show every turn (``always`` + open triggers), in a stable order."""
        return self._send(ops.load_pinned(context_id, cap=cap, filters=filters))

    def upcoming(
        self,
        context_id: str,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        cap: int | None = None,
    ) -> UpcomingResult:
        """``on_trigger`` memories whose window meets [start, end) (default: the next 7 days)."""
        return self._send(ops.upcoming(context_id, start=start, end=end, cap=cap))

    # ------------------------------------------------------------ feedback

    def feedback(
        self,
        context_id: str,
        memory_id: str,
        helpful: bool,
        *,
        query: str | None = None,
        note: str | None = None,
    ) -> Feedback:
        """Record whether a memory helped (for ``query``); it nudges the re-ranker."""
        return self._send(
            ops.feedback(context_id, memory_id=memory_id, helpful=helpful, query=query, note=note)
        )

    def list_feedback(
        self,
        context_id: str,
        *,
        memory_id: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> FeedbackPage:
        """Feedback events, newest first (pass ``next_cursor`` back as ``cursor``)."""
        return self._send(
            ops.list_feedback(context_id, memory_id=memory_id, cursor=cursor, limit=limit)
        )

    # ------------------------------------------------------------ agent state

    def set_state(
        self, context_id: str, key: str, value: Any, *, ttl_seconds: int | Unset | None = UNSET
    ) -> State:
        """Store a JSON value under ``key`` for 24 h, or ``ttl_seconds`` (None: forever)."""
        return self._send(ops.set_state(context_id, key, value=value, ttl_seconds=ttl_seconds))

    def get_state(self, context_id: str, key: str) -> State:
        """One live key (NotFoundError once it has expired)."""
        return self._send(ops.get_state(context_id, key))

    def list_state(
        self, context_id: str, *, cursor: str | None = None, limit: int | None = None
    ) -> StatePage:
        """The live keys of a context in key order (pass ``next_cursor`` back as ``cursor``)."""
        return self._send(ops.list_state(context_id, cursor=cursor, limit=limit))

    def delete_state(self, context_id: str, key: str) -> None:
        """Remove a key (NotFoundError if it is missing or expired)."""
        return self._send(ops.delete_state(context_id, key))

    # ------------------------------------------------------------ access: keys and audit

    def create_key(
        self,
        name: str,
        *,
        role: KeyRole | None = None,
        context_ids: Sequence[str] | None = None,
        expires_at: datetime | None = None,
    ) -> ApiKeyCreated:
        """A new API key (admins); its secret ``key`` is in this answer only."""
        return self._send(
            ops.create_key(name=name, role=role, context_ids=context_ids, expires_at=expires_at)
        )

    def list_keys(self) -> ApiKeyPage:
        """Every key of the workspace, without secrets (admins)."""
        return self._send(ops.list_keys())

    def revoke_key(self, key_id: str) -> None:
        """Revoke a key; it stops working at once (admins)."""
        return self._send(ops.revoke_key(key_id))

    def list_audit(self, *, cursor: str | None = None, limit: int | None = None) -> AuditPage:
        """The audit log, newest first (admins)."""
        return self._send(ops.list_audit(cursor=cursor, limit=limit))

    def health(self) -> Health:
        """Liveness, version, database and embedder of the server."""
        return self._send(ops.health())
