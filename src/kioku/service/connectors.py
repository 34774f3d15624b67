"""Connectors: idempotent sync of external documents into a context, and ingestion.

A source names each of its documents with an ``external_id`` (a Slack thread's ts, a
Markdown section, an ingest op's id). Syncing the same document again changes nothing; a
changed one is updated in place (re-embedded when its text changed); a deleted one is
forgotten. Every op is checked before anything is written, so a bad op writes nothing.

External ids belong to the channel that wrote them (its *owner*: ``ingest:<actor>`` for each
ingesting key or local caller, ``slack:<source>``, ``markdown``). A channel sees only its own:
an upsert of an id another owner holds creates a memory of its own beside it, and a delete of
one answers ``absent`` -- exactly what a fresh id gets, so nothing is rewritten, deleted or
revealed across owners (a connector key cannot touch an imported, trusted memory).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from kioku.clock import Clock, system_clock
from kioku.errors import (
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    PayloadTooLargeError,
    first_error,
)
from kioku.models import (
    ContextCreate,
    IngestDelete,
    IngestOpResult,
    IngestRequest,
    IngestResult,
    IngestUpsert,
)
from kioku.models.base import clean_summary, clean_tags
from kioku.models.connectors import IngestStatus
from kioku.models.json_input import find_unstorable, loc_path
from kioku.service.contexts import ContextService
from kioku.service.guard import audit, operation
from kioku.service.imports import JSONL_OWNER, ImportResult, import_batch
from kioku.service.memories import (
    MemoryService,
    derive_trust_tier,
    judge_instructions,
    lexical_text,
)
from kioku.service.principal import Principal
from kioku.service.transfer_format import canonical_json
from kioku.storage.ports import ConnectorPort
from kioku.storage.records import (
    ContextRow,
    EmbeddingJob,
    MemoryChanges,
    MemoryRow,
    NewMemory,
    embedding_text,
)

MAX_IDEMPOTENCY_KEY = 200


@dataclass(frozen=True)
class ExternalItem:
    """One document of a source, as it is now."""

    external_id: str
    summary: str
    content: str = ""
    type: str = "note"
    tags: list[str] = field(default_factory=list)
    importance: float = 0.5
    source_uri: str | None = None
    thread: str | None = None
    """The ordered thread it belongs to (a file, a channel, a Slack thread), if any."""
    thread_position: int | None = None
    """Its place in ``thread``: any increasing integers (section index, ts in µs)."""


_COMPARED = (
    "summary", "content", "type", "tags", "importance", "source_uri", "thread",
    "thread_position",
)  # fmt: skip


class ConnectorService:
    """Sync external documents, ingest ops from connector workers, bind contexts to sources."""

    def __init__(
        self,
        store: ConnectorPort,
        contexts: ContextService,
        memories: MemoryService,
        clock: Clock = system_clock,
    ) -> None:
        self.store = store
        self.contexts = contexts
        self.memories = memories
        self.clock = clock

    # ------------------------------------------------------------ ingestion (REST, SDK)

    @operation("ingest", audited=True)
    def ingest(
        self,
        principal: Principal,
        context_ref: str,
        request: IngestRequest,
        *,
        idempotency_key: str | None = None,
    ) -> IngestResult:
        """Apply upsert/delete ops by external id; stamped ``source_type=connector``.

        With an ``idempotency_key``, the answer is stored: the same request again returns it
        unchanged and writes nothing; a different request under the same key is a conflict.
        Keys are the caller's own (stored hashed with its owner): another key's are unseen.
        """
        context = self.contexts.resolve(principal, context_ref)
        ops = _parse_ops(request.ops)
        digest = hashlib.sha256(
            canonical_json([[op.model_dump() for op in ops], request.wait]).encode()
        ).hexdigest()
        ws = principal.workspace_id
        owner = ingest_owner(principal)
        stored_key = None
        if idempotency_key is not None:
            if not 1 <= len(idempotency_key) <= MAX_IDEMPOTENCY_KEY:
                raise InvalidInputError(
                    f"an idempotency key has 1 to {MAX_IDEMPOTENCY_KEY} characters",
                    field="Idempotency-Key",
                )
            stored_key = hashlib.sha256(f"{owner}\n{idempotency_key}".encode()).hexdigest()
            stored = self.store.get_ingest_request(ws, context.id, stored_key)
            if stored is not None:
                if stored[0] != digest:
                    raise ConflictError(
                        "this Idempotency-Key was used for a different request",
                        field="Idempotency-Key",
                    )
                return IngestResult.model_validate(stored[1])
        upserts = [_item(op) for op in ops if isinstance(op, IngestUpsert)]
        deletes = [op.external_id for op in ops if isinstance(op, IngestDelete)]
        # Connector ingestion is a channel of its own (docs/connectors.md), whoever runs the worker.
        outcomes = self.sync(
            principal.via("connector"), context, upserts, deletes,
            owner=owner, wait=request.wait,
        )  # fmt: skip
        results = [
            IngestOpResult(
                index=index, op=op.op, external_id=op.external_id,
                status=outcomes[op.external_id][0], memory_id=outcomes[op.external_id][1],
            )
            for index, op in enumerate(ops)
        ]  # fmt: skip
        statuses = [r.status for r in results]
        answer = IngestResult(
            created=statuses.count("created"),
            updated=statuses.count("updated"),
            unchanged=statuses.count("unchanged"),
            deleted=statuses.count("deleted"),
            absent=statuses.count("absent"),
            results=results,
        )
        if stored_key is not None:
            self.store.save_ingest_request(
                ws, context.id, stored_key, digest, answer.model_dump(), self.clock()
            )
        self.store.upsert_connector(ws, "ingest", principal.actor, None, self.clock())
        return answer

    # ------------------------------------------------------------ for importers

    def import_memories(
        self,
        principal: Principal,
        context_ref: str,
        items: Sequence[tuple[str, dict[str, Any]]],
        *,
        owner: str = JSONL_OWNER,
        atomic: bool = False,
    ) -> ImportResult:
        """Write up to a batch of memories (each the fields of ``remember``) once each, by
        external id: an id ``owner`` already holds among the context's live memories is
        skipped, so importing the same items again writes nothing (``kioku import-jsonl``).

        As ``remember_batch`` otherwise (the 'write' permission, an audit line): provenance
        from the principal's channel (``import``), the new rows in one transaction, embedded
        as any write is (by the background worker when one runs), invalid items reported by
        index; with ``atomic`` one invalid item rejects the batch. Items are not compared with
        what is stored: a skipped item leaves its memory as it is. Not an operation of the
        surfaces (as ``sync``): the local import command calls it.
        """
        if not principal.can("write"):
            raise ForbiddenError("importing memories needs the 'write' permission")
        context = self.contexts.resolve(principal, context_ref)
        result = import_batch(
            self.memories, principal, context, items, owner=owner, atomic=atomic, clock=self.clock
        )
        detail = {"created": result.created, "skipped": result.skipped}
        audit(self, principal, "import_memories", "ok", context_id=context.id, detail=detail)
        return result

    def count_imported(
        self,
        principal: Principal,
        context_ref: str,
        external_ids: Sequence[str],
        *,
        owner: str = JSONL_OWNER,
    ) -> int:
        """How many of ``external_ids`` ``owner`` holds among the context's live memories:
        what an import has written, now or by an earlier run (``kioku import-jsonl``). Not an
        operation of the surfaces (as ``import_memories``): it needs the 'read' permission."""
        if not principal.can("read"):
            raise ForbiddenError("counting imported memories needs the 'read' permission")
        context = self.contexts.resolve(principal, context_ref)
        ids = list(external_ids)
        return len(self.store.external_memories(principal.workspace_id, context.id, owner, ids))

    def connector_context(
        self,
        principal: Principal,
        kind: str,
        source: str,
        key: str,
        name: str,
        description: str,
    ) -> ContextRow:
        """The ``external`` context connector ``(kind, source)`` feeds for ``key`` (a Slack
        channel id): the one it made before, even if the channel was renamed since; else the
        context ``name``, created if missing. A context of that name the connector did not
        make is a conflict: a connector never takes over (and turns external) someone's."""
        if not principal.can("admin"):
            raise ForbiddenError("importing from a connector creates contexts: admin only")
        ws = principal.workspace_id
        connector = self.store.upsert_connector(ws, kind, source, None, self.clock())
        known: dict[str, str] = dict(connector.config.get("contexts", {}))
        row = self.store.get_context(ws, known[key]) if key in known else None
        if row is not None and row.connector_id == connector.id:
            return row
        row = self.store.get_context_by_name(ws, name)
        if row is None:
            self.contexts.create_context(
                principal,
                ContextCreate(name=name, description=description, trust_tier="external"),
            )
            row = self.store.get_context_by_name(ws, name)
            assert row is not None
            self.store.bind_context(ws, row.id, connector.id)
        elif row.connector_id != connector.id:
            raise ConflictError(
                f"context {name!r} exists and is not fed by {kind} {source!r}; "
                "rename or delete it first",
                field="context",
            )
        known[key] = row.id
        config = {**connector.config, "contexts": known}
        self.store.upsert_connector(ws, kind, source, config, self.clock())
        resolved = self.store.get_context(ws, row.id)
        assert resolved is not None
        return resolved

    def sync(
        self,
        principal: Principal,
        context: ContextRow,
        upserts: Sequence[ExternalItem],
        deletes: Sequence[str] = (),
        *,
        owner: str,
        wait: bool = False,
        replace_source: str | None = None,
    ) -> dict[str, tuple[IngestStatus, str | None]]:
        """Bring ``context`` in line with these documents; per external id, (status, memory).

        Only the external ids ``owner`` wrote are looked at (module docstring). New ids are
        created (in the order given), changed ones updated in place, unchanged
        ones left alone (``updated_at`` too), deleted ones forgotten; with
        ``replace_source``, so are the live memories from that ``source_uri`` that are not
        among ``upserts`` (a file's sections that are gone). Provenance comes from the
        principal's channel. Everything is checked before the first write, and the writes
        land in one transaction.
        """
        if not principal.can("write") and not principal.can("ingest"):
            raise ForbiddenError("syncing documents needs the 'write' or 'ingest' permission")
        ws = principal.workspace_id
        if replace_source is not None:
            wanted = {item.external_id for item in upserts} | set(deletes)
            gone = sorted(
                external_id
                for external_id, row in self.store.external_memories(ws, context.id, owner).items()
                if row.source_uri == replace_source and external_id not in wanted
            )
            deletes = [*deletes, *gone]
        self._check(upserts, deletes)
        existing = self.store.external_memories(
            ws, context.id, owner, [*(i.external_id for i in upserts), *deletes]
        )
        now = self.memories.stamps.take(self.clock(), len(upserts))  # as remember's stamps
        outcomes: dict[str, tuple[IngestStatus, str | None]] = {}
        new_rows: list[NewMemory] = []
        changes: list[tuple[MemoryRow, MemoryChanges]] = []
        for item in upserts:
            current = existing.get(item.external_id)
            if current is None:
                stamp = now + timedelta(microseconds=len(new_rows))  # keeps the given order
                row = self._new_row(principal, context, item, owner, stamp)
                new_rows.append(row)
                outcomes[item.external_id] = ("created", row.id)
            elif all(getattr(current, n) == getattr(item, n) for n in _COMPARED):
                outcomes[item.external_id] = ("unchanged", current.id)
            else:
                changes.append((current, _changes(current, item)))
                outcomes[item.external_id] = ("updated", current.id)
        doomed: list[str] = []
        for external_id in deletes:
            current = existing.get(external_id)
            if current is None:
                outcomes[external_id] = ("absent", None)
            else:
                doomed.append(current.id)
                outcomes[external_id] = ("deleted", current.id)
        updated = self.store.sync_memories(
            ws, context.id, new_rows, [(row.id, change) for row, change in changes], doomed, now
        )
        rewritten = {row.id for row, change in changes if change.text_changed}
        jobs = [
            EmbeddingJob(r.id, ws, r.context_id, embedding_text(r.summary, r.content))
            for r in [*new_rows, *(u for u in updated if u.id in rewritten)]
        ]
        self.memories.schedule_embedding(jobs, wait)
        return outcomes

    def _check(self, upserts: Sequence[ExternalItem], deletes: Sequence[str]) -> None:
        seen: set[str] = set()
        for where, external_id in [
            *((f"upserts[{i}]", item.external_id) for i, item in enumerate(upserts)),
            *((f"deletes[{i}]", e) for i, e in enumerate(deletes)),
        ]:
            if external_id in seen:
                raise InvalidInputError(
                    f"external_id {external_id!r} appears twice", field=f"{where}.external_id"
                )
            seen.add(external_id)
        texts = [*((f"upserts[{i}]", asdict(item)) for i, item in enumerate(upserts))]
        for where, value in [*texts, ("deletes", [*deletes])]:  # imports too: no request model
            if (found := find_unstorable(value)) is not None:
                path = loc_path(where, found[0])
                raise InvalidInputError(f"{path} {found[1]}", field=path)
        limit = self.memories.max_content_bytes
        for index, item in enumerate(upserts):
            size = len(item.content.encode("utf-8"))
            if size > limit:
                raise PayloadTooLargeError(
                    f"content is {size} bytes; the limit is {limit}",
                    field=f"upserts[{index}].content",
                )

    def _new_row(
        self,
        principal: Principal,
        context: ContextRow,
        item: ExternalItem,
        owner: str,
        now: datetime,
    ) -> NewMemory:
        source_type = principal.source_type
        trust_tier = derive_trust_tier(context, source_type)
        return NewMemory(
            id=str(uuid.uuid4()),
            context_id=context.id,
            summary=item.summary,
            content=item.content,
            type=item.type,
            tags=list(item.tags),
            importance=item.importance,
            delivery_mode="on_recall",
            trigger_from=None,
            trigger_until=None,
            source_type=source_type,
            source_uri=item.source_uri,
            trust_tier=trust_tier,
            lexical_tokens=lexical_text(item.summary, item.content, list(item.tags)),
            created_at=now,
            instruction_like=judge_instructions(trust_tier, item.summary, item.content),
            external_id=item.external_id,
            external_owner=owner,
            tainted=source_type == "connector",  # external in any context, for ever
            thread=item.thread,
            thread_position=item.thread_position,
        )


def ingest_owner(principal: Principal) -> str:
    """The owner of the external ids an ingesting caller writes: its API key (each key is a
    connector of its own), or the local operator (loopback dev, CLI, stdio)."""
    return f"ingest:key:{principal.key_id}" if principal.key_id else "ingest:local"


def _changes(current: MemoryRow, item: ExternalItem) -> MemoryChanges:
    values: dict[str, Any] = {
        name: getattr(item, name)
        for name in _COMPARED
        if getattr(current, name) != getattr(item, name)
    }
    change = MemoryChanges(values=values)
    change.text_changed = (item.summary, item.content) != (current.summary, current.content)
    if change.text_changed:
        # The memory keeps its tier (the context's, or external for connector text).
        values["instruction_like"] = judge_instructions(
            current.trust_tier, item.summary, item.content
        )
    if change.text_changed or item.tags != current.tags:
        change.lexical_tokens = lexical_text(item.summary, item.content, list(item.tags))
    return change


def _parse_ops(raw: list[dict[str, Any]]) -> list[IngestUpsert | IngestDelete]:
    """Validate every op (422 naming ``ops[i].field``); duplicates are an error too."""
    ops: list[IngestUpsert | IngestDelete] = []
    seen: set[str] = set()
    for index, value in enumerate(raw):
        prefix = f"ops[{index}]."
        kind = value.get("op")
        model = {"upsert": IngestUpsert, "delete": IngestDelete}.get(kind)  # type: ignore[arg-type]
        if model is None:
            raise InvalidInputError(
                f"{prefix}op must be 'upsert' or 'delete'; nothing was written",
                field=prefix + "op",
            )
        try:
            op = model.model_validate(value)
        except ValidationError as exc:
            where, message = first_error(exc, prefix)
            raise InvalidInputError(
                f"{where}: {message}; nothing was written", field=where
            ) from None
        if isinstance(op, IngestUpsert):
            op = _clean(op, prefix)
        if op.external_id in seen:
            raise InvalidInputError(
                f"external_id {op.external_id!r} appears twice; nothing was written",
                field=prefix + "external_id",
            )
        seen.add(op.external_id)
        ops.append(op)
    return ops


def _clean(op: IngestUpsert, prefix: str) -> IngestUpsert:
    """The summary and tag rules of ``remember`` (trimmed, non-empty, tags de-duplicated)."""
    try:
        summary = clean_summary(op.summary)
    except ValueError as exc:
        raise InvalidInputError(str(exc), field=prefix + "summary") from None
    try:
        tags = clean_tags(op.tags)
    except ValueError as exc:
        raise InvalidInputError(str(exc), field=prefix + "tags") from None
    return op.model_copy(update={"summary": summary, "tags": tags})


def _item(op: IngestUpsert) -> ExternalItem:
    return ExternalItem(
        external_id=op.external_id, summary=op.summary, content=op.content, type=op.type,
        tags=op.tags, importance=op.importance, source_uri=op.source_uri,
    )  # fmt: skip
