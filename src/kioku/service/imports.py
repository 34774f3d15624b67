"""Importing memories once each: ``kioku import-jsonl``'s batch path (docs/cli.md).

A batch of items, each the fields of ``remember`` under an external id, is written as
``remember_batch`` writes one, except that an external id its owner already holds among the
context's live memories is skipped: the same items imported again write nothing, so an
interrupted import is finished by running it again. The ids are the owner's (``jsonl``), as a
connector's are its own (``kioku.service.connectors``): no other channel's memory is touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Literal

from pydantic import ValidationError

from kioku.clock import Clock
from kioku.errors import InvalidInputError, KiokuError, first_error
from kioku.models import MemoryCreate
from kioku.models.connectors import MAX_EXTERNAL_ID
from kioku.service.memories import MemoryService
from kioku.service.principal import Principal
from kioku.service.threads import ThreadPlaces
from kioku.storage.records import ContextRow, EmbeddingJob, NewMemory, embedding_text

JSONL_OWNER = "jsonl"
"""The owner of the external ids ``kioku import-jsonl`` writes: a line's own ``external_id``,
else a hash of the line's content."""


@dataclass(frozen=True)
class ImportedItem:
    """What an import did with one item: ``skipped`` when its external id is already a live
    memory of the context (``memory_id``), or repeats an earlier item's."""

    index: int
    status: Literal["created", "skipped", "error"]
    memory_id: str | None = None
    error: dict[str, Any] | None = None
    """``code``, ``field`` (of the item, e.g. ``summary``) and ``message``."""


@dataclass(frozen=True)
class ImportResult:
    """Per-item results of an import batch."""

    created: int
    skipped: int
    failed: int
    results: list[ImportedItem]


def import_batch(
    memories: MemoryService,
    principal: Principal,
    context: ContextRow,
    items: Sequence[tuple[str, dict[str, Any]]],
    *,
    owner: str,
    atomic: bool,
    clock: Clock,
) -> ImportResult:
    """Write the items whose external id ``owner`` does not hold yet in ``context``, in one
    transaction (``ConnectorService.import_memories`` checks the caller and audits)."""
    store, graph, ws = memories.store, memories.graph, principal.workspace_id
    held = store.external_memories(ws, context.id, owner, [key for key, _ in items])
    now = memories.stamps.take(clock(), len(items))  # as remember's stamps
    places = ThreadPlaces(store, ws, context.id)
    results: list[ImportedItem] = []
    rows: list[NewMemory] = []
    links: dict[str, list[str]] = {}
    taken = {key: row.id for key, row in held.items()}
    for index, (external_id, value) in enumerate(items):
        if external_id in taken:
            results.append(ImportedItem(index, "skipped", taken[external_id]))
            continue
        try:
            if not 1 <= len(external_id) <= MAX_EXTERNAL_ID:
                raise InvalidInputError(
                    f"external_id has 1 to {MAX_EXTERNAL_ID} characters", field="external_id"
                )
            data = MemoryCreate.model_validate(value)
            linked = graph.check_links(
                principal, context, data.linked_memory_ids, "linked_memory_ids"
            )
            # Distinct microseconds keep the items' order in listings.
            row = memories._new_row(  # remember's own rules for a new memory
                principal, context, data, now + timedelta(microseconds=index), places
            )
        except ValidationError as exc:
            where, message = first_error(exc)
            error = {"code": "invalid_input", "field": where, "message": message}
            results.append(ImportedItem(index, "error", error=error))
        except KiokuError as exc:
            error = {"code": exc.code, "field": exc.field or "", "message": exc.message}
            results.append(ImportedItem(index, "error", error=error))
        else:
            rows.append(replace(row, external_id=external_id, external_owner=owner))
            links[row.id] = linked
            taken[external_id] = row.id
            results.append(ImportedItem(index, "created", row.id))
    failed = [r.error or {} for r in results if r.status == "error"]
    if failed and atomic:
        raise InvalidInputError(
            f"{len(failed)} of {len(items)} items are invalid; nothing was written "
            f"(first: {failed[0].get('field')}: {failed[0].get('message')})",
            field=failed[0].get("field"),
            details=failed,
        )
    store.insert_memories(ws, rows)
    for row in rows:
        graph.link(ws, context.id, row.id, links[row.id])
    jobs = [
        EmbeddingJob(r.id, ws, r.context_id, embedding_text(r.summary, r.content)) for r in rows
    ]
    memories.schedule_embedding(jobs, wait=False)
    skipped = sum(r.status == "skipped" for r in results)
    return ImportResult(created=len(rows), skipped=skipped, failed=len(failed), results=results)
