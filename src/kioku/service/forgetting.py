"""``forget_by_query``: soft-delete what a query (or filters) match, previewed, then confirmed.

Deleting by similarity is dangerous, so it takes two calls and is deterministic:

1. without ``confirmation`` nothing changes: the answer lists exactly the memories that would
   be forgotten (at most ``k``; ``truncated`` says when more match) and a ``confirmation``;
2. the same request with that confirmation matches again and soft-deletes exactly the
   previewed set in one transaction, or refuses (409) if the set is not the same any more.

What matches: with a query, recall's own ranking for it (same filters, no side effects), by
default only the memories holding every word of the query (``all_terms``: the vector leg
always has neighbours, and "forget what I said about Berlin" must not take the nearest
unrelated notes with it); ``match="recall"`` takes recall's top ``k`` as they are. Without a
query, the memories the filters match, newest first (at least one filter is required).
Pinned memories (``always``, ``on_trigger``: goals and guardrails) are kept unless
``filters.delivery_mode`` names them; the answer counts those kept.

The confirmation is two digests the server recomputes, so it needs no server state (it
works across restarts, replicas, and a CLI process per step). The first binds the request:
workspace, context, query, match, ``k`` and the validated filters; a confirmation of any
other request is invalid input. The second binds that to the exact ``(id, updated_at)``
pairs previewed and to ``truncated``; any difference is a conflict. It is not a secret: its
strength is what it is bound to. It can only ever forget the set the request matches when it
is confirmed, and only if that is the set that was previewed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

from kioku.clock import Clock, system_clock
from kioku.errors import ConflictError, InvalidInputError
from kioku.models import (
    MAX_FORGET,
    ForgetCandidate,
    ForgetQuery,
    ForgetResult,
    RecallFilters,
    RecallRequest,
)
from kioku.search.tokenize import tokenize
from kioku.service.contexts import ContextService
from kioku.service.filters import memory_filter
from kioku.service.guard import operation
from kioku.service.memories import lexical_text
from kioku.service.principal import Principal
from kioku.service.recall import RecallService
from kioku.storage.ports import ForgetPort
from kioku.storage.records import ContextRow, MemoryFilter, MemoryRow

PINNED_MODES = ["always", "on_trigger"]
_LOAD_BATCH = 50
_CHANGED = (
    "the memories this request matches are not the ones previewed (one was added, changed or "
    "forgotten since, or the confirmation was altered); nothing was forgotten: preview again"
)


@dataclass
class Matched:
    """The memories one request matches, best first, at most ``k``."""

    rows: list[MemoryRow]
    scores: dict[str, float]
    truncated: bool


class ForgetService:
    """Forget by query: a preview, then a confirmation of exactly that preview."""

    def __init__(
        self,
        store: ForgetPort,
        contexts: ContextService,
        recall: RecallService,
        clock: Clock = system_clock,
    ) -> None:
        self.store = store
        self.contexts = contexts
        self.recall = recall
        self.clock = clock

    @operation("write", audited=True)
    def forget_by_query(
        self, principal: Principal, context_ref: str, request: ForgetQuery
    ) -> ForgetResult:
        """Preview (no ``confirmation``) or forget (with the preview's confirmation) the
        memories a query or filters match; all of the previewed set or nothing (409)."""
        context = self.contexts.resolve(principal, context_ref)
        filters, pinned_by_default = _effective_filters(request)
        flt = memory_filter(filters)
        request_digest = _request_digest(principal.workspace_id, context.id, request, flt)
        if request.confirmation is not None:
            _, sent_request, _ = request.confirmation.split(".")
            if not hmac.compare_digest(sent_request, request_digest):
                raise InvalidInputError(
                    "this confirmation was issued for another request (query, filters, match, "
                    "k, context or workspace); nothing was forgotten: preview this one first",
                    field="confirmation",
                )
        matched = self._match(principal, context, request, filters)
        kept = 0
        if pinned_by_default:
            pinned = filters.model_copy(update={"delivery_mode": PINNED_MODES})
            kept = len(self._match(principal, context, request, pinned).rows)
        token = f"fq1.{request_digest}.{_set_digest(request_digest, matched)}"
        result = ForgetResult(
            status="preview",
            matches=[_candidate(row, matched.scores.get(row.id)) for row in matched.rows],
            count=len(matched.rows),
            truncated=matched.truncated,
            pinned_kept=kept,
            confirmation=token if matched.rows else None,
            forgotten_ids=[],
        )
        if request.confirmation is None:
            return result
        if not hmac.compare_digest(request.confirmation, token):
            raise ConflictError(_CHANGED, field="confirmation")
        versions = {row.id: row.updated_at for row in matched.rows}
        now = self.clock()
        if versions and not self.store.soft_delete_memories(
            principal.workspace_id, context.id, versions, now
        ):
            raise ConflictError(_CHANGED, field="confirmation")  # changed since we matched
        return result.model_copy(
            update={
                "status": "forgotten",
                "confirmation": None,
                "forgotten_ids": [row.id for row in matched.rows],
            }
        )

    def _match(
        self,
        principal: Principal,
        context: ContextRow,
        request: ForgetQuery,
        filters: RecallFilters,
    ) -> Matched:
        k = request.k
        if request.query is None:
            flt = memory_filter(filters)
            ws = principal.workspace_id
            rows = self.store.list_memories(ws, [context.id], flt, None, k + 1)
            return Matched(rows=rows[:k], scores={}, truncated=len(rows) > k)
        # all_terms filters recall's candidates, so it looks as deep as recall ever does;
        # match="recall" is recall's top k exactly.
        depth_k = k if request.match == "recall" else MAX_FORGET
        search = RecallRequest(query=request.query, k=depth_k, filters=filters)
        ranking = self.recall.ranking(principal, context.id, search)
        scores = {memory_id: score for score, memory_id in ranking.ranked}
        ranked = [memory_id for _, memory_id in ranking.ranked]
        if request.match == "recall":
            rows = self._load(principal, context, ranked[:k])
            return Matched(rows=rows, scores=scores, truncated=len(ranked) > k)
        # all_terms: only memories the lexical leg found can hold every word; keep those that
        # do, in recall's order, until one more than k shows there are more.
        terms = set(tokenize(request.query))
        found = ranking.leg_rank("lexical")
        candidates = [memory_id for memory_id in ranked if memory_id in found]
        kept: list[MemoryRow] = []
        for start in range(0, len(candidates), _LOAD_BATCH):
            for row in self._load(principal, context, candidates[start : start + _LOAD_BATCH]):
                if terms <= set(lexical_text(row.summary, row.content, row.tags).split()):
                    kept.append(row)
            if len(kept) > k:
                break
        # A full lexical leg may have had more hits below its depth: say so, never guess no.
        leg_was_full = len(ranking.ran.get("lexical", [])) >= ranking.depth
        return Matched(rows=kept[:k], scores=scores, truncated=len(kept) > k or leg_was_full)

    def _load(self, principal: Principal, context: ContextRow, ids: list[str]) -> list[MemoryRow]:
        """The live rows of ``ids`` in this context, in the order given."""
        rows = self.store.get_memories(principal.workspace_id, ids)
        return [
            row
            for memory_id in ids
            if (row := rows.get(memory_id)) is not None
            and row.deleted_at is None
            and row.context_id == context.id
        ]


def _effective_filters(request: ForgetQuery) -> tuple[RecallFilters, bool]:
    """The filters the match runs with, and whether pinned memories were left out by default."""
    filters = request.filters
    if filters.include_deleted:
        raise InvalidInputError(
            "only live memories can be forgotten", field="filters.include_deleted"
        )
    if filters.context_ids:
        raise InvalidInputError(
            "forget_by_query works in one context: call it once per context",
            field="filters.context_ids",
        )
    if request.query is None:
        if request.match != "all_terms":
            raise InvalidInputError("match needs a query", field="match")
        flt = replace(memory_filter(filters), include_superseded=False)
        if not flt.is_narrowing:
            raise InvalidInputError(
                "give a query or at least one filter: forget_by_query never matches a whole "
                "context (purge_context erases one)",
                field="query",
            )
    elif request.match == "all_terms" and not tokenize(request.query):
        raise InvalidInputError(
            "the query has no searchable words (only stop words or punctuation): name what to "
            'forget, or use match="recall"',
            field="query",
        )
    if filters.delivery_mode is not None:
        return filters, False
    return filters.model_copy(update={"delivery_mode": "on_recall"}), True


def _canonical(value: Any) -> Any:
    """A filter value in one spelling: instants in UTC, lists sorted."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, list):
        return sorted(_canonical(item) for item in value)
    return value


def _digest(purpose: str, payload: dict[str, Any]) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    data = f"kioku forget_by_query {purpose} v1\0{text}".encode()
    return hashlib.sha256(data).hexdigest()[:32]


def _request_digest(
    workspace_id: str, context_id: str, request: ForgetQuery, flt: MemoryFilter
) -> str:
    """What the request asks for, whatever the spelling of its filters."""
    filters = {name: _canonical(value) for name, value in asdict(flt).items()}
    return _digest(
        "request",
        {
            "workspace_id": workspace_id,
            "context_id": context_id,
            "query": request.query,
            "match": request.match,
            "k": request.k,
            "filters": filters,
        },
    )


def _set_digest(request_digest: str, matched: Matched) -> str:
    """Exactly which memories, at which version, and whether more matched."""
    pairs = sorted([row.id, row.updated_at.astimezone(UTC).isoformat()] for row in matched.rows)
    payload = {"request": request_digest, "memories": pairs, "truncated": matched.truncated}
    return _digest("set", payload)


def _candidate(row: MemoryRow, score: float | None) -> ForgetCandidate:
    rounded = None if score is None else round(score, 8)
    return ForgetCandidate.model_validate({**asdict(row), "score": rounded})
