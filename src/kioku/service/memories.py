"""Writing, reading, changing and forgetting memories."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from pydantic import ValidationError

from kioku.clock import Clock, Stamps, system_clock
from kioku.errors import (
    InvalidInputError,
    KiokuError,
    NotFoundError,
    PayloadTooLargeError,
    first_error,
)
from kioku.models import (
    BatchCreate,
    BatchItemResult,
    BatchResult,
    Memory,
    MemoryCreate,
    MemoryDetail,
    MemoryPage,
    MemoryUpdate,
    RecallFilters,
    TriggerWindowError,
    check_trigger_window,
)
from kioku.search.tokenize import tokenize
from kioku.service.contexts import ContextService, raise_null
from kioku.service.cursors import pack_cursor, unpack_cursor
from kioku.service.embedding import EmbeddingScheduler
from kioku.service.filters import memory_filter
from kioku.service.graph import Associations
from kioku.service.guard import operation
from kioku.service.principal import Principal
from kioku.service.suspicious import memory_is_suspicious
from kioku.service.threads import ThreadPlaces
from kioku.service.views import memory_view
from kioku.storage.ports import MemoryPort
from kioku.storage.records import (
    ContextRow,
    EmbeddingJob,
    MemoryChanges,
    MemoryRow,
    NewMemory,
    embedding_text,
)
from kioku.vocabulary import TrustTier

MAX_PAGE = 200


def lexical_text(summary: str, content: str, tags: list[str]) -> str:
    """The space-joined tokens a memory is indexed under (summary, content and tags)."""
    return " ".join(tokenize(" ".join([summary, content, *tags])))


def random_memory_id() -> str:
    """A new memory's id: a random uuid4 (``MemoryService.new_id``)."""
    return str(uuid.uuid4())


def derive_trust_tier(context: ContextRow, source_type: str) -> TrustTier:
    """External if the context is, or if the text came from a connector (docs/concepts.md)."""
    if context.trust_tier == "external" or source_type == "connector":
        return "external"
    return "trusted"


def judge_instructions(trust_tier: str, summary: str, content: str) -> bool | None:
    """The detector's verdict, stored with external text only (``None``: judge it on read).

    Trusted text is never flagged, so trusted writes skip the detector's cost; should its
    context become external later, its rows are judged when read.
    """
    if trust_tier != "external":
        return None
    return memory_is_suspicious(summary, content)


class MemoryService:
    """The memory lane: remember, batch, update, forget/purge, get, list."""

    def __init__(
        self,
        store: MemoryPort,
        contexts: ContextService,
        embedding: EmbeddingScheduler | None,
        *,
        max_content_bytes: int,
        embed_async: bool = True,
        graph: Associations | None = None,
        clock: Clock = system_clock,
    ) -> None:
        self.store = store
        self.contexts = contexts
        self.embedding = embedding
        self.graph = graph or Associations(store, contexts)
        self.max_content_bytes = max_content_bytes
        self.embed_async = embed_async
        # The runtime's clock; the eval gate swaps it to write dated facts (eval/corpus.py).
        self.clock = clock
        self.stamps = Stamps()
        """Where created_at and updated_at come from: a row's version changes on every write."""
        self.new_id: Callable[[], str] = random_memory_id
        """Where new memories' ids come from; the benchmark and the eval gate swap in seeded
        ids (``benchmark/reproducible.py``) so that two runs name every memory alike."""

    # ------------------------------------------------------------ writes

    def _stamp(self, count: int = 1) -> datetime:
        """The time of the next write, or the first of ``count`` consecutive ones (memories
        written together list in the given order; an update always moves updated_at)."""
        return self.stamps.take(self.clock(), count)

    def _check_content(self, content: str, field: str = "content") -> None:
        size = len(content.encode("utf-8"))
        if size > self.max_content_bytes:
            raise PayloadTooLargeError(
                f"content is {size} bytes; the limit is {self.max_content_bytes}", field=field
            )

    def _new_row(
        self,
        principal: Principal,
        context: ContextRow,
        data: MemoryCreate,
        now: datetime,
        places: ThreadPlaces,
    ) -> NewMemory:
        self._check_content(data.content)
        source_type = principal.source_type
        trust_tier = derive_trust_tier(context, source_type)
        return NewMemory(
            id=self.new_id(),
            context_id=context.id,
            summary=data.summary,
            content=data.content,
            type=data.type,
            tags=data.tags,
            importance=data.importance,
            delivery_mode=data.delivery_mode,
            trigger_from=data.trigger_from,
            trigger_until=data.trigger_until,
            source_type=source_type,
            source_uri=data.source_uri,
            trust_tier=trust_tier,
            lexical_tokens=lexical_text(data.summary, data.content, data.tags),
            created_at=now,
            instruction_like=judge_instructions(trust_tier, data.summary, data.content),
            thread=data.thread,
            thread_position=places.place(data.thread, data.position),
        )

    def schedule_embedding(self, jobs: list[EmbeddingJob], wait: bool) -> None:
        """Embed now (asked to, no worker, or the queue is over its bound), else wake the worker."""
        if self.embedding is None or not jobs:
            return
        worker = self.embedding
        backlog = worker.running and self.store.pending_count() > worker.queue_limit
        if wait or backlog or not self.embed_async or not worker.running:
            worker.embed_jobs(jobs)
        else:
            worker.notify()

    def _after_write(self, principal: Principal, rows: list[NewMemory], wait: bool) -> None:
        ws = principal.workspace_id
        jobs = [
            EmbeddingJob(r.id, ws, r.context_id, embedding_text(r.summary, r.content)) for r in rows
        ]
        self.schedule_embedding(jobs, wait)

    @operation("write", audited=True)
    def remember(
        self, principal: Principal, context_ref: str, data: MemoryCreate, *, wait: bool = False
    ) -> Memory:
        """Write one memory. Lexically searchable at once; vector-searchable once embedded."""
        context = self.contexts.resolve(principal, context_ref)
        links = self.graph.check_links(
            principal, context, data.linked_memory_ids, "linked_memory_ids"
        )
        places = ThreadPlaces(self.store, principal.workspace_id, context.id)
        row = self._new_row(principal, context, data, self._stamp(), places)
        self.store.insert_memories(principal.workspace_id, [row])
        self.graph.link(principal.workspace_id, context.id, row.id, links)
        self._after_write(principal, [row], wait)
        return self._get(principal, context, row.id)

    @operation("write", audited=True)
    def remember_batch(
        self, principal: Principal, context_ref: str, batch: BatchCreate
    ) -> BatchResult:
        """Write up to 100 memories in one transaction, with a result per item.

        Invalid items are reported by index; with ``atomic`` one invalid item rejects the batch.
        """
        context = self.contexts.resolve(principal, context_ref)
        now = self._stamp(len(batch.items))
        results: list[BatchItemResult] = []
        rows: list[NewMemory] = []
        links: dict[str, list[str]] = {}
        places = ThreadPlaces(self.store, principal.workspace_id, context.id)
        for index, item in enumerate(batch.items):
            prefix = f"items[{index}]."
            try:
                # Distinct microseconds keep the batch's order in listings.
                stamp = now + timedelta(microseconds=index)
                data = MemoryCreate.model_validate(item)
                linked = self.graph.check_links(
                    principal, context, data.linked_memory_ids, "linked_memory_ids"
                )
                row = self._new_row(principal, context, data, stamp, places)
                links[row.id] = linked
            except ValidationError as exc:
                field, message = first_error(exc, prefix)
                results.append(_item_error(index, "invalid_input", field, message))
            except KiokuError as exc:
                results.append(
                    _item_error(index, exc.code, prefix + (exc.field or ""), exc.message)
                )
            else:
                rows.append(row)
                results.append(BatchItemResult(index=index, status="created", memory_id=row.id))
        failed = [r for r in results if r.status == "error"]
        if failed and batch.atomic:
            first = failed[0].error or {}
            raise InvalidInputError(
                f"{len(failed)} of {len(batch.items)} items are invalid; nothing was written "
                f"(first: {first.get('field')}: {first.get('message')})",
                field=first.get("field"),
                details=[r.error or {} for r in failed],
            )
        self.store.insert_memories(principal.workspace_id, rows)
        for row in rows:
            self.graph.link(principal.workspace_id, context.id, row.id, links[row.id])
        self._after_write(principal, rows, batch.wait)
        return BatchResult(created=len(rows), failed=len(failed), results=results)

    @operation("write", audited=True)
    def update_memory(
        self, principal: Principal, context_ref: str, memory_id: str, data: MemoryUpdate
    ) -> Memory:
        """Change the fields that were sent; re-embed only when summary or content changed."""
        context = self.contexts.resolve(principal, context_ref)
        current = self._live_row(principal, context, memory_id)
        sent = data.model_dump(exclude_unset=True)
        for name in ("summary", "content", "type", "tags", "importance", "delivery_mode"):
            if name in sent and sent[name] is None:
                raise_null(name)
        if "content" in sent:
            self._check_content(sent["content"])
        mode = sent.get("delivery_mode", current.delivery_mode)
        if mode != "on_trigger":  # leaving on_trigger clears the window
            sent.setdefault("trigger_from", None)
            sent.setdefault("trigger_until", None)
        trigger_from = sent.get("trigger_from", current.trigger_from)
        trigger_until = sent.get("trigger_until", current.trigger_until)
        try:
            check_trigger_window(mode, trigger_from, trigger_until)
        except TriggerWindowError as exc:
            raise InvalidInputError(str(exc), field=exc.field) from exc
        changes = MemoryChanges(values={k: v for k, v in sent.items()})
        summary = sent.get("summary", current.summary)
        content = sent.get("content", current.content)
        tags = sent.get("tags", current.tags)
        changes.text_changed = (summary, content) != (current.summary, current.content)
        if changes.text_changed:
            verdict = judge_instructions(current.trust_tier, summary, content)
            changes.values["instruction_like"] = verdict
        if changes.text_changed or tags != current.tags:
            changes.lexical_tokens = lexical_text(summary, content, tags)
        row = self.store.update_memory(principal.workspace_id, memory_id, changes, self._stamp())
        if row is None:
            raise NotFoundError(f"memory {memory_id!r} not found", field="memory_id")
        if changes.text_changed:
            text = embedding_text(row.summary, row.content)
            job = EmbeddingJob(row.id, principal.workspace_id, row.context_id, text)
            self.schedule_embedding([job], wait=False)
        return memory_view(row)

    @operation("write", audited=True)
    def forget(self, principal: Principal, context_ref: str, memory_id: str) -> Memory:
        """Soft-delete: gone from recall and listings, kept for audit until purged."""
        context = self.contexts.resolve(principal, context_ref)
        self._live_row(principal, context, memory_id)
        self.store.soft_delete_memory(principal.workspace_id, memory_id, self._stamp())
        row = self.store.get_memory(principal.workspace_id, memory_id)
        assert row is not None
        return memory_view(row)

    @operation("admin", audited=True)
    def purge(self, principal: Principal, context_ref: str, memory_id: str) -> None:
        """Hard-delete: the row, its text, its tokens and its vector are erased."""
        context = self.contexts.resolve(principal, context_ref)
        self._row(principal, context, memory_id, include_deleted=True)
        self.store.purge_memory(principal.workspace_id, memory_id)

    # ------------------------------------------------------------ reads

    def _row(
        self, principal: Principal, context: ContextRow, memory_id: str, *, include_deleted: bool
    ) -> MemoryRow:
        row = self.store.get_memory(principal.workspace_id, memory_id)
        if (
            row is None
            or row.context_id != context.id
            or (row.deleted_at is not None and not include_deleted)
        ):
            raise NotFoundError(f"memory {memory_id!r} not found", field="memory_id")
        return row

    def _live_row(self, principal: Principal, context: ContextRow, memory_id: str) -> MemoryRow:
        return self._row(principal, context, memory_id, include_deleted=False)

    def _get(self, principal: Principal, context: ContextRow, memory_id: str) -> Memory:
        return memory_view(self._live_row(principal, context, memory_id))

    @operation("read")
    def get_memory(
        self,
        principal: Principal,
        context_ref: str,
        memory_id: str,
        *,
        include_deleted: bool = False,
    ) -> MemoryDetail:
        """One memory in full, with its edges. Counts as an access."""
        context = self.contexts.resolve(principal, context_ref)
        self._row(principal, context, memory_id, include_deleted=include_deleted)
        self.store.record_access(principal.workspace_id, memory_id, self.clock())
        row = self._row(principal, context, memory_id, include_deleted=include_deleted)
        return MemoryDetail(
            **memory_view(row).model_dump(),
            edges=self.graph.edges_of(principal.workspace_id, memory_id),
        )

    @operation("read")
    def list_memories(
        self,
        principal: Principal,
        context_ref: str,
        filters: RecallFilters | None = None,
        *,
        cursor: str | None = None,
        limit: int = 50,
    ) -> MemoryPage:
        """Newest first, deterministic, keyset-paginated. No ranking."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInputError(f"limit must be between 1 and {MAX_PAGE}", field="limit")
        context = self.contexts.resolve(principal, context_ref)
        flt = memory_filter(filters or RecallFilters())
        context_ids = [context.id]
        for ref in (filters.context_ids if filters else None) or []:
            extra = self.contexts.resolve(principal, ref).id
            if extra not in context_ids:
                context_ids.append(extra)
        after = decode_cursor(cursor) if cursor else None
        rows = self.store.list_memories(principal.workspace_id, context_ids, flt, after, limit + 1)
        next_cursor = encode_cursor(rows[limit - 1]) if len(rows) > limit else None
        return MemoryPage(items=[memory_view(r) for r in rows[:limit]], next_cursor=next_cursor)


def _item_error(index: int, code: str, field: str, message: str) -> BatchItemResult:
    return BatchItemResult(
        index=index,
        status="error",
        error={"code": code, "field": field.rstrip("."), "message": message},
    )


def encode_cursor(row: MemoryRow) -> str:
    """An opaque cursor pointing just past ``row`` in listing order."""
    return pack_cursor(row.created_at.isoformat(), row.id)


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """Parse a cursor from ``encode_cursor``; anything else is a 422 on ``cursor``."""
    created_at, memory_id = unpack_cursor(cursor, str, str)
    try:
        stamp = datetime.fromisoformat(created_at)
    except ValueError:
        stamp = None
    if stamp is None or stamp.tzinfo is None:
        raise InvalidInputError("cursor is not a cursor this server issued", field="cursor")
    return stamp, memory_id
